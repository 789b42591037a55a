package dev.caravan.benchmarks.harness;

import dev.caravan.csi.support.Json;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The performance gate: each figure of a run as a ratio of two p50s measured in that same run (a cost
 * over a reference: publish over the in-process bind, over {@code mount --bind}; stats over Probe; a large
 * mount table over a small one), compared with the same ratio in a committed baseline. A loaded or slower
 * machine slows both sides of a ratio, so the gate fails on a change in the code, not in the machine:
 * a ratio that grew by more than the tolerance fails it.
 */
final class Gate {
  /**
   * How much a ratio may grow over its baseline before the gate fails: +50 %. In three runs of the gate
   * (its interleaved phase) on one commit, on 2 CPUs at load average about 5,
   * a ratio of two operations measured in the same loop varied by at most 1.17 times (highest over
   * lowest), a ratio across the two mount-table sizes (measured one after the other) by 1.44 times, and
   * none was more than 1.13 times the median of the three, which is what the baseline holds. The
   * regressions it is for are larger: a mountinfo read back on the publish path (publish at 1 000 lines was
   * 2.3 times publish at 24 before statx), a journal write that waits for the disk (about 1.7 times).
   */
  static final double DEFAULT_TOLERANCE = 0.5;

  private Gate() {}

  /** One ratio: {@code cost} p50 over {@code reference} p50, both from this run. */
  record Ratio(String key, String cost, String reference, double value) {
    static String header() {
      return "| ratio | cost p50 / reference p50 |\n|---|---:|";
    }

    String row() {
      return String.format(Locale.ROOT, "| %s | %.3f |", key, value);
    }
  }

  /**
   * The ratios this run's rows allow (a phase not run gives none of its ratios), and each server's
   * start over a bare JVM's and its memory after the run's calls over its memory idle. Memory is a
   * ratio to itself so that the machine's page size, JDK build and libc drop out; what is left is what
   * the calls made the process keep.
   */
  static List<Ratio> ratios(List<Result> results, List<Footprint> footprints, long startMillis,
      long jvmStartMillis) {
    List<Ratio> out = ratios(results);
    out.add(new Ratio("start → Probe ready / java -version", "start", "java -version",
        (double) startMillis / Math.max(1, jvmStartMillis)));
    for (Footprint f : footprints) {
      String at = (f.server().isEmpty() ? "" : f.server() + ", ") + "table " + f.table();
      out.add(new Ratio("VmRSS after the calls / VmRSS idle (" + at + ")", "VmRSS after", "VmRSS idle",
          (double) f.afterKiB() / f.idleKiB()));
    }
    return out;
  }

  /** The latency ratios alone. */
  static List<Ratio> ratios(List<Result> results) {
    List<Ratio> out = new ArrayList<>();
    for (Result r : results) {
      String at = (r.server().isEmpty() ? "" : r.server() + ", ") + "table " + r.table();
      if (r.side().equals("client")) {
        over(results, r, NodeLatencyHarness.BIND_FLOOR, NodeLatencyHarness.PUBLISH, "publish / Mounts.bind", at, out);
        // Unpublish over the in-process bind, not the in-process unmount: umount2's own p50 moved 1.6x
        // between runs on a quiet machine, the bind's by under 1.3x.
        over(results, r, NodeLatencyHarness.BIND_FLOOR, NodeLatencyHarness.UNPUBLISH, "unpublish / Mounts.bind", at, out);
        over(results, r, NodeLatencyHarness.BIND_PROCESS, NodeLatencyHarness.PUBLISH, "publish / mount --bind", at, out);
        over(results, r, NodeLatencyHarness.UNBIND_PROCESS, NodeLatencyHarness.UNPUBLISH, "unpublish / umount", at, out);
        over(results, r, NodeLatencyHarness.PROBE, NodeLatencyHarness.STATS, "stats / Probe", at, out);
        over(results, r, NodeLatencyHarness.BIND_PROCESS, NodeLatencyHarness.PROBE, "Probe / mount --bind", at, out);
      } else {
        over(results, r, NodeLatencyHarness.BIND_FLOOR, NodeLatencyHarness.PUBLISH, "publish (server) / Mounts.bind", at,
            out);
        over(results, r, NodeLatencyHarness.BIND_FLOOR, NodeLatencyHarness.UNPUBLISH, "unpublish (server) / Mounts.bind",
            at, out);
      }
    }
    return out;
  }

  /** Adds {@code name} = r / reference when {@code r} is {@code costOp} and the reference was measured. */
  private static void over(List<Result> results, Result r, String referenceOp, String costOp, String name, String at,
      List<Ratio> out) {
    if (!r.operation().equals(costOp)) {
      return;
    }
    find(results, r.server(), r.table(), "client", referenceOp).ifPresent(ref ->
        out.add(new Ratio(name + " (" + at + ")", costOp, referenceOp, (double) r.p50() / ref.p50())));
  }

  private static Optional<Result> find(List<Result> results, String server, int table, String side, String op) {
    return results.stream().filter(x -> x.server().equals(server) && x.table() == table && x.side().equals(side)
        && x.operation().equals(op)).findFirst();
  }

  static Map<String, Object> json(String machine, String loadBefore, String loadAfter, double seconds,
      List<Result> results, List<Footprint> footprints, long startMillis, long jvmStartMillis, List<Ratio> ratios) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("machine", machine);
    m.put("load_before", loadBefore);
    m.put("load_after", loadAfter);
    m.put("seconds", Math.round(seconds));
    m.put("rows", results.stream().map(Result::json).toList());
    m.put("start_ms", startMillis);
    m.put("java_version_ms", jvmStartMillis);
    m.put("footprints", footprints.stream().map(Footprint::json).toList());
    Map<String, Object> r = new LinkedHashMap<>();
    ratios.forEach(x -> r.put(x.key(), x.value()));
    m.put("ratios", r);
    return m;
  }

  /**
   * Compares {@code ratios} with the baseline's (a result file of an earlier run: its "ratios"), prints
   * a table of every ratio and returns whether none grew beyond {@code tolerance} and none is missing.
   */
  static boolean compare(Path baselineFile, List<Ratio> ratios, double tolerance, PrintStream out) throws IOException {
    Map<?, ?> baseline = (Map<?, ?>) ((Map<?, ?>) Json.parse(Files.readString(baselineFile))).get("ratios");
    Map<String, Double> now = new LinkedHashMap<>();
    ratios.forEach(r -> now.put(r.key(), r.value()));
    boolean ok = true;
    out.println();
    out.printf(Locale.ROOT, "Performance gate: each ratio against %s, failing above baseline × %.2f%n%n", baselineFile,
        1 + tolerance);
    out.println("| ratio | baseline | now | change | verdict |");
    out.println("|---|---:|---:|---:|---|");
    for (Map.Entry<?, ?> e : baseline.entrySet()) {
      String key = (String) e.getKey();
      double base = ((Number) e.getValue()).doubleValue();
      Double value = now.get(key);
      if (value == null) {
        ok = false;
        out.printf(Locale.ROOT, "| %s | %.3f | – | – | **FAIL: not measured** |%n", key, base);
        continue;
      }
      boolean worse = value > base * (1 + tolerance);
      ok &= !worse;
      out.printf(Locale.ROOT, "| %s | %.3f | %.3f | %+.0f %% | %s |%n", key, base, value, (value / base - 1) * 100,
          worse ? "**FAIL: slower**" : "ok");
    }
    for (Map.Entry<String, Double> e : now.entrySet()) {
      if (!baseline.containsKey(e.getKey())) {
        out.printf(Locale.ROOT, "| %s | – | %.3f | – | new (not in the baseline) |%n", e.getKey(), e.getValue());
      }
    }
    out.println();
    out.println(ok ? "performance gate: passed" : "performance gate: FAILED (see the rows marked FAIL; to accept a"
        + " change on purpose, refresh the baseline as benchmarks/README.md says)");
    return ok;
  }
}
