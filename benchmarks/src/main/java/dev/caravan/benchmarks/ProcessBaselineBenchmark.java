package dev.caravan.benchmarks;

import dev.caravan.storage.exec.ToolResult;
import dev.caravan.storage.exec.ToolRunner;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The floor under every shell-out: starting {@code true}, which does nothing, through the same
 * {@link ToolRunner} the other benchmarks use. What {@code mount} or {@code blkid} costs above this
 * is their own work (loading libraries, reading the mount table, probing); this part is the price
 * of a process at all.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 3)
@Fork(value = 2, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class ProcessBaselineBenchmark {
  private static final Duration TOOL_TIMEOUT = Duration.ofSeconds(30);

  @Setup
  public void setUp() {
    Requirements.requireBinary("true");
  }

  @Benchmark
  public ToolResult trueBinary() {
    return ToolRunner.run(List.of("true"), TOOL_TIMEOUT);
  }
}
