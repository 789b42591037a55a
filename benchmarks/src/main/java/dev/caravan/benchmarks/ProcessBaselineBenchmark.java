package dev.caravan.benchmarks;

import dev.caravan.storage.exec.ToolResult;
import dev.caravan.storage.exec.ToolRunner;
import java.util.List;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * The floor under every shell-out: starting {@code true}, which does nothing, through the same
 * {@link ToolRunner} the other benchmarks use. What {@code mount} or {@code blkid} costs above this
 * is their own work (loading libraries, reading the mount table, probing); this part is the price
 * of a process at all.
 */
@State(Scope.Benchmark)
public class ProcessBaselineBenchmark extends ShellOutComparison {

  @Setup
  public void setUp() {
    Requirements.requireBinary("true");
  }

  @Benchmark
  public ToolResult trueBinary() {
    return ToolRunner.run(List.of("true"), TOOL_TIMEOUT);
  }
}
