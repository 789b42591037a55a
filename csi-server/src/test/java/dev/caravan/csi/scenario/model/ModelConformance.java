package dev.caravan.csi.scenario.model;

import dev.caravan.csi.scenario.TestBackend;
import dev.caravan.storage.testing.HostRequirements;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The model-based test: random sequences of CSI calls (create, from a snapshot, as a clone, delete,
 * snapshots, expand, stage, publish for mount and block at several targets, unpublish, unstage),
 * writes through the targets, duplicate and concurrent calls, bad input, restarts, kills at crash
 * points and DHV create/delete, encrypted volumes where the backend encrypts (with wrong and missing
 * passphrases now and then), against a real plugin over its real socket; after every step the
 * invariants of {@link ModelChecks} and the spec's codes of {@link ModelSpec} must hold.
 *
 * <p>The seed and the step budget are fixed, so a run is repeatable; {@code -Dcaravan.model.seed},
 * {@code -Dcaravan.model.steps} and {@code -Dcaravan.model.seeds} (how many seeds from that one) run
 * it longer by hand, and {@code -Dcaravan.model.shrink-seconds} bounds the shrinking of a failure.
 */
abstract class ModelConformance {
  static final long SEED = 20261203L;

  abstract TestBackend backend();

  /** Steps per run in the build: a few minutes on the host, about two of guest time in the guest. */
  abstract int steps();

  abstract ModelGenerator.Options options();

  /**
   * Options with no DHV operations and no kills, and encrypted volumes as {@code backend} can make
   * them here ({@link ModelGenerator.Encryption}): local always (its pool has the encryption feature),
   * file where dm-crypt is usable ({@code HostRequirements.whyNoDmCrypt}, which asks {@code
   * HostCapabilities}), qnap never: its LUKS2 volumes are proven by LuksOnQnapGuestTest and the qnap
   * kill suite, and the model's oracle of open keys reads ZFS and loop devices only.
   */
  static ModelGenerator.Options encryptionOn(TestBackend backend) {
    return switch (backend.driver()) {
      case "local" -> new ModelGenerator.Options(false, false, ModelGenerator.Encryption.ON);
      case "file" -> HostRequirements.whyNoDmCrypt()
          .map(why -> new ModelGenerator.Options(false, false, ModelGenerator.Encryption.OFF, why))
          .orElseGet(() -> new ModelGenerator.Options(false, false, ModelGenerator.Encryption.ON));
      default -> new ModelGenerator.Options(false, false, ModelGenerator.Encryption.OFF,
          "the model's oracle of open keys reads ZFS and loop devices only; LuksOnQnapGuestTest and"
              + " KillConformanceOnQnapTest prove encrypted qnap volumes");
    };
  }

  @Test
  void randomSequencesKeepEveryInvariant() throws Exception {
    TestBackend backend = backend();
    backend.assumeAvailable();
    backend.assumeNodeSide();
    ModelGenerator.Options options = options();
    if (options.encryption() == ModelGenerator.Encryption.OFF) {
      System.out.println("model run on " + backend + ": no encrypted volumes, " + options.whyNoEncryption());
    }
    long seed = Long.getLong("caravan.model.seed", SEED);
    int steps = Integer.getInteger("caravan.model.steps", steps());
    int seeds = Integer.getInteger("caravan.model.seeds", 1);
    ModelRunner runner = new ModelRunner(backend, options,
        Duration.ofSeconds(Long.getLong("caravan.model.shrink-seconds", 300)));
    List<String> found = new ArrayList<>();
    for (long s = seed; s < seed + seeds; s++) {
      long start = System.nanoTime();
      Optional<ModelRunner.Counterexample> c = runner.explore(s, steps);
      Map<String, Integer> encryption = runner.encryptionCoverage();
      System.out.println("encrypted volumes in that run (calls, by what and how answered):"
          + (encryption.isEmpty() ? " none" : ""));
      new TreeMap<>(encryption).forEach((what, n) -> System.out.printf("  %4d  %s%n", n, what));
      System.out.printf("model run on %s: seed %d, %d steps, %s, %d s%n", backend, s, steps,
          c.map(x -> "COUNTEREXAMPLE (" + x.failure().kind + ")").orElse("every invariant held"),
          Duration.ofNanos(System.nanoTime() - start).toSeconds());
      c.ifPresent(x -> {
        System.out.println(x.report());
        found.add(x.report());
      });
    }
    if (!found.isEmpty()) {
      throw new AssertionError("the model found " + found.size() + " counterexample(s):\n" + String.join("\n", found));
    }
  }
}
