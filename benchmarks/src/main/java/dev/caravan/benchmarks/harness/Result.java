package dev.caravan.benchmarks.harness;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * One row of a run: an operation's latencies as the client saw them or as the server logged them,
 * against one server (its label; empty when the run served one jar) with a mount table of so many lines
 * ({@code table} as asked with {@code --mount-tables}, {@code mountLines} as it was: never fewer than the
 * host has without fillers).
 */
record Result(String server, int table, int mountLines, String side, Samples samples) {
  String operation() {
    return samples.name();
  }

  long p50() {
    return samples.percentile(50);
  }

  static String header() {
    return "| server | mount lines | side | operation | n | p50 µs | p90 µs | p99 µs | mean µs |\n"
        + "|---|---:|---|---|---:|---:|---:|---:|---:|";
  }

  String row() {
    return String.format(Locale.ROOT, "| %s | %d | %s | %s | %d | %.0f | %.0f | %.0f | %.0f |",
        server.isEmpty() ? "-" : server, mountLines, side, operation(), samples.count(), micros(50), micros(90),
        micros(99), samples.mean() / 1000.0);
  }

  private double micros(double p) {
    return samples.percentile(p) / 1000.0;
  }

  Map<String, Object> json() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("server", server);
    m.put("mount_table", table);
    m.put("mount_lines", mountLines);
    m.put("side", side);
    m.put("operation", operation());
    m.put("n", samples.count());
    m.put("p50_us", micros(50));
    m.put("p90_us", micros(90));
    m.put("p99_us", micros(99));
    m.put("mean_us", samples.mean() / 1000.0);
    return m;
  }
}
