package dev.caravan.csi.scenario.model;

import dev.caravan.csi.scenario.PluginFixture;
import dev.caravan.csi.scenario.TestBackend;
import dev.caravan.csi.testing.Ddmin;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Runs model-based sequences on a fresh plugin each: drawn from a seed ({@link #explore}), or given
 * ({@link #replay}), checking every invariant after every step and at the end, after the whole state
 * is taken down through the API. A failing drawn run is shrunk by delta debugging (ddmin) to a short
 * sequence that still breaks the same invariant, and reported as a numbered list of steps with its
 * seed and its Java form, ready to be pasted into a named regression test.
 */
final class ModelRunner {
  /** A run that broke an invariant: the steps up to and including the failing one. */
  record Counterexample(long seed, int ran, List<ModelStep> steps, ModelFailure failure) {
    String report() {
      return "seed " + seed + ": " + failure.kind + " broken at step " + ran + ", shrunk to " + steps.size()
          + " steps:\n"
          + ModelStep.describe(steps) + "failure: " + failure.getMessage() + "\n"
          + java.util.Arrays.stream(failure.getSuppressed()).map(t -> "and then: " + t.getMessage() + "\n")
              .collect(java.util.stream.Collectors.joining());
    }
  }

  private final TestBackend backend;
  private final ModelGenerator.Options options;
  private final Duration shrinkBudget;
  /** What the last run did with encrypted volumes ({@link ModelDriver#encryptionCoverage}). */
  private Map<String, Integer> lastEncryptionCoverage = Map.of();

  ModelRunner(TestBackend backend, ModelGenerator.Options options, Duration shrinkBudget) {
    this.backend = backend;
    this.options = options;
    this.shrinkBudget = shrinkBudget;
  }

  /**
   * Long runs by hand, outside the build: {@code ModelRunner <backend> <first seed> <seeds> <steps>},
   * on the test class path; prints one line per seed and each counterexample, shrunk.
   */
  public static void main(String[] args) throws Exception {
    TestBackend backend = switch (args[0]) {
      case "local" -> TestBackend.local();
      case "qnap" -> TestBackend.qnapOnLio();
      default -> TestBackend.file();
    };
    long first = Long.parseLong(args[1]);
    int steps = Integer.parseInt(args[3]);
    ModelRunner runner = new ModelRunner(backend, new ModelGenerator.Options(args[0].equals("file"), args[0].equals("file"),
        ModelConformance.encryptionOn(backend).encryption()),
        Duration.ofSeconds(Long.getLong("caravan.model.shrink-seconds", 900)));
    for (long seed = first; seed < first + Long.parseLong(args[2]); seed++) {
      long start = System.nanoTime();
      Optional<Counterexample> c = runner.explore(seed, steps);
      System.out.printf("seed %d, %d steps: %s (%d s)%n", seed, steps, c.map(x -> "COUNTEREXAMPLE").orElse("held"),
          Duration.ofNanos(System.nanoTime() - start).toSeconds());
      c.ifPresent(x -> System.out.println(x.report()));
      System.out.flush();
    }
  }

  /** Draws and runs {@code budget} steps from {@code seed}; a counterexample comes back shrunk. */
  Optional<Counterexample> explore(long seed, int budget) throws Exception {
    ModelGenerator g = new ModelGenerator(seed, options, backend);
    List<ModelStep> done = new ArrayList<>();
    Optional<ModelFailure> failure = run(s -> done.size() < budget ? Optional.of(g.next(s)) : Optional.empty(), done);
    if (failure.isEmpty()) {
      return Optional.empty();
    }
    System.out.println("seed " + seed + ": " + failure.get().getMessage() + "\nat step " + done.size() + " ("
        + done.get(done.size() - 1) + "); shrinking");
    System.out.flush();
    List<ModelStep> shrunk = shrink(done, failure.get().kind);
    ModelFailure last = replay(shrunk).orElse(failure.get());
    return Optional.of(new Counterexample(seed, done.size(), shrunk, last));
  }

  /** What the last run did with encrypted volumes: calls by what they were and how they were answered. */
  Map<String, Integer> encryptionCoverage() {
    return Map.copyOf(lastEncryptionCoverage);
  }

  /** Runs exactly {@code steps}; the first invariant broken, if any. */
  Optional<ModelFailure> replay(List<ModelStep> steps) throws Exception {
    List<ModelStep> done = new ArrayList<>();
    return run(s -> done.size() < steps.size() ? Optional.of(steps.get(done.size())) : Optional.empty(), done);
  }

  @FunctionalInterface
  private interface Source {
    Optional<ModelStep> next(ModelState m);
  }

  private Optional<ModelFailure> run(Source source, List<ModelStep> done) throws Exception {
    PluginFixture f = PluginFixture.start(backend);
    ModelFailure failure = null;
    try (ModelDriver d = new ModelDriver(f, options)) {
      ModelChecks checks = new ModelChecks(d);
      lastEncryptionCoverage = d.encryptionCoverage;
      try {
        checks.all();
        for (Optional<ModelStep> s = source.next(d.m); s.isPresent(); s = source.next(d.m)) {
          done.add(s.get());
          d.apply(s.get());
          checks.all();
        }
        d.tearDown();
        checks.nothingLeft();
      } catch (ModelFailure e) {
        failure = e;
      } catch (RuntimeException | AssertionError e) {
        failure = new ModelFailure("unexpected " + e.getClass().getSimpleName(), String.valueOf(e.getMessage()), e);
      }
    } finally {
      // Whatever the fixture finds at close (a leaked mount, a loop device still held) is a broken
      // invariant too; after a failed step it is a consequence, reported beside the step's failure,
      // never instead of it.
      try {
        f.close();
      } catch (AssertionError | IOException | RuntimeException e) {
        ModelFailure leak = new ModelFailure("nothing leaked", e.getClass().getSimpleName() + ": " + e.getMessage(), e);
        if (failure == null) {
          failure = leak;
        } else {
          failure.addSuppressed(leak);
        }
      }
    }
    return Optional.ofNullable(failure);
  }

  /**
   * ddmin over the steps: drops chunks, then single steps, while the run still breaks the invariant
   * of {@code kind}; stops early when the budget is spent (the result is then short, not minimal).
   */
  List<ModelStep> shrink(List<ModelStep> failing, String kind) throws Exception {
    long deadline = System.nanoTime() + shrinkBudget.toNanos();
    List<ModelStep> steps = new ArrayList<>(failing);
    // First without the steps that each start a JVM (kills, DHV): most failures need none of them.
    List<ModelStep> cheap = steps.stream().filter(s -> s.crash().isEmpty() && !s.op().name().startsWith("DHV")).toList();
    if (cheap.size() < steps.size()) {
      Optional<ModelFailure> f = replay(cheap);
      if (f.isPresent() && f.get().kind.equals(kind)) {
        steps = new ArrayList<>(cheap);
      }
    }
    return Ddmin.shrink(steps, without -> {
      Optional<ModelFailure> f = replay(without);
      return f.isPresent() && f.get().kind.equals(kind);
    }, deadline);
  }
}
