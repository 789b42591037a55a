package dev.caravan.benchmarks;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The measurement every in-process-against-shell-out benchmark shares ({@link MountBenchmark},
 * {@link ProbeBenchmark}) with the floor under them ({@link ProcessBaselineBenchmark}): sampled
 * times in microseconds, the same warmup, iterations and forks, and the same bound on a tool's run.
 * One profile, so that a shell-out's cost above the process floor is read off figures taken alike.
 * JMH reads these annotations from a benchmark's superclass.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 3)
@Fork(value = 2, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public abstract class ShellOutComparison {
  /** How long one run of a tool may take before it counts as hung. */
  protected static final Duration TOOL_TIMEOUT = Duration.ofSeconds(30);
}
