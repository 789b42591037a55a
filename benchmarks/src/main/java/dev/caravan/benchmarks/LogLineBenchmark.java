package dev.caravan.benchmarks;

import dev.caravan.csi.cli.LogLineFormatter;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.SimpleFormatter;
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
 * The CPU that formatting one per-RPC log line costs the server: {@code SimpleFormatter} with the
 * serve command's pattern (what every line cost before {@link LogLineFormatter}) against {@code
 * LogLineFormatter}, which makes the same text. Each line carries its own instant, a millisecond after
 * the previous one, as the lines of calls a millisecond apart do.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class LogLineBenchmark {
  private SimpleFormatter simple;
  private LogLineFormatter lineFormatter;
  private LogRecord record;
  private Instant at;

  @Setup
  public void setUp() {
    System.setProperty("java.util.logging.SimpleFormatter.format", LogLineFormatter.PATTERN);
    simple = new SimpleFormatter();
    lineFormatter = new LogLineFormatter();
    record = new LogRecord(Level.INFO, "rpc method=NodePublishVolume volume=vol-0123456789 code=OK us=873");
    record.setLoggerName("dev.caravan.csi.rpc");
    record.setSourceClassName("dev.caravan.csi.server.CallLogInterceptor");
    record.setSourceMethodName("close");
    at = Instant.parse("2026-12-02T10:00:00Z");
  }

  private LogRecord next() {
    at = at.plusMillis(1);
    record.setInstant(at);
    return record;
  }

  @Benchmark
  public String simpleFormatter() {
    return simple.format(next());
  }

  @Benchmark
  public String logLineFormatter() {
    return lineFormatter.format(next());
  }
}
