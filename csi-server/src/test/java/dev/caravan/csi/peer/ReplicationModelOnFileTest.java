package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.csi.peer.ReplicationModel.Step;
import dev.caravan.csi.peer.ReplicationModelDriver.Broken;
import dev.caravan.csi.testing.Ddmin;
import dev.caravan.storage.testing.HostRequirements;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The model-based test of replication, on the file backend: random sequences of writes, rounds,
 * streams cut at random points, the replica node going down and coming back, owner restarts,
 * growth, user snapshots, deletions and restores, on two real plugin instances peered over loopback
 * mTLS, checked after every step against {@link ReplicationModel} ({@link ReplicationModelDriver}
 * lists the invariants). A failing run is shrunk to a short sequence and reported with its seed.
 *
 * <p>The seed and the step budget are fixed, so a run is repeatable; {@code
 * -Dcaravan.replication-model.seed}, {@code .steps} and {@code .seeds} run it longer by hand.
 */
class ReplicationModelOnFileTest {
  static final long SEED = 20261205L;
  /** Steps of the run in the build: some 20 s. */
  static final int STEPS = 150;
  private static final Duration SHRINK = Duration.ofSeconds(Long.getLong("caravan.replication-model.shrink-seconds", 300));

  @Test
  void copiesHoldOnlyWhatTheirSourceHeldWhateverTheRoundsCutsOutagesAndRestartsBetweenThem() throws Exception {
    Optional<String> why = HostRequirements.whyNoLoopAndExt4();
    assumeTrue(why.isEmpty(), () -> "the replication model stages ext4 on loop devices: " + why.orElse(""));
    long seed = Long.getLong("caravan.replication-model.seed", SEED);
    int steps = Integer.getInteger("caravan.replication-model.steps", STEPS);
    int seeds = Integer.getInteger("caravan.replication-model.seeds", 1);
    List<String> found = new ArrayList<>();
    for (long s = seed; s < seed + seeds; s++) {
      long start = System.nanoTime();
      Map<String, Integer> coverage = new java.util.TreeMap<>();
      Optional<String> counterexample = explore(s, steps, coverage);
      System.out.println("replication model run, seed " + s + ", " + steps + " steps, "
          + Duration.ofNanos(System.nanoTime() - start).toSeconds() + " s: "
          + counterexample.map(c -> "COUNTEREXAMPLE").orElse("every invariant held") + "; what it did:");
      coverage.forEach((what, n) -> System.out.printf("  %4d  %s%n", n, what));
      counterexample.ifPresent(c -> {
        System.out.println(c);
        found.add(c);
      });
      if (counterexample.isEmpty() && s == SEED && steps >= STEPS) {
        // The fixed run must reach what it is there for, or a change to the generator could make it prove nothing.
        assertThat(coverage).as("what the fixed run did").containsKeys("restore: records compared",
            "round: copy compared byte for byte", "round while staged", "cut mid-stream: the copy kept",
            "round, replica down: failed", "delete refused: snapshots");
      }
    }
    assertThat(found).as("counterexamples").isEmpty();
  }

  /** Runs {@code budget} steps drawn from {@code seed}; a counterexample, shrunk and described. */
  private Optional<String> explore(long seed, int budget, Map<String, Integer> coverage) throws Exception {
    ReplicationModel.Generator g = new ReplicationModel.Generator(seed);
    List<Step> done = new ArrayList<>();
    Optional<Broken> failure = run(m -> done.size() < budget ? Optional.of(g.next(m)) : Optional.empty(), done,
        coverage);
    if (failure.isEmpty()) {
      return Optional.empty();
    }
    System.out.println("seed " + seed + ": " + failure.get().getMessage() + "\nat step " + done.size() + "; shrinking");
    String kind = failure.get().kind;
    List<Step> shrunk = Ddmin.shrink(done, steps -> replay(steps).filter(b -> b.kind.equals(kind)).isPresent(),
        System.nanoTime() + SHRINK.toNanos());
    Broken last = replay(shrunk).orElse(failure.get());
    return Optional.of("seed " + seed + ": \"" + kind + "\" broken at step " + done.size() + ", shrunk to "
        + shrunk.size() + " steps:\n" + Step.describe(shrunk) + "failure: " + last.getMessage());
  }

  Optional<Broken> replay(List<Step> steps) throws Exception {
    List<Step> done = new ArrayList<>();
    return run(m -> done.size() < steps.size() ? Optional.of(steps.get(done.size())) : Optional.empty(), done,
        new java.util.TreeMap<>());
  }

  @FunctionalInterface
  private interface Source {
    Optional<Step> next(ReplicationModel m);
  }

  private static Optional<Broken> run(Source source, List<Step> done, Map<String, Integer> coverage) throws Exception {
    try (ReplicationModelDriver d = new ReplicationModelDriver()) {
      try {
        d.check();
        for (Optional<Step> s = source.next(d.m); s.isPresent(); s = source.next(d.m)) {
          done.add(s.get());
          d.apply(s.get());
          d.check();
        }
        d.tearDown();
        return Optional.empty();
      } catch (Broken e) {
        return Optional.of(e);
      } catch (RuntimeException e) {
        return Optional.of(new Broken("unexpected " + e.getClass().getSimpleName(), String.valueOf(e.getMessage()), e));
      } finally {
        coverage.putAll(d.coverage);
      }
    }
  }
}
