package dev.caravan.benchmarks.harness;

import dev.caravan.csi.support.Json;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The performance gate: each figure of a run as a ratio of two figures measured in that same run (a
 * cost over a reference of its own kind: publish and unpublish over {@code mount --bind} and {@code
 * umount} run as processes, stats over Probe, the server's start over {@code caravan version}'s, memory
 * after the calls over memory idle), compared with the same ratio in a committed baseline. A loaded or
 * slower machine slows both sides of a ratio, so the gate fails on a change in the code, not in the
 * machine: a ratio that grew by more than the tolerance fails it.
 */
final class Gate {
  /**
   * How much a ratio may grow over its baseline before a run counts as over its limit: +50 %. The
   * baseline is each ratio's median of three runs. Over ten single runs on one commit on a quiet 2-CPU
   * machine, the latency ratios spread by 1.2 to 1.9 times (highest over lowest), start by 1.2 and
   * memory by 1.1, and 3 of the 10 runs had some ratio over its limit. So one run is not
   * enough to fail: the harness measures again, up to twice, and fails on a ratio over its limit in
   * every run. The regressions it is for are larger, and every run sees them: a mountinfo read on the
   * publish path took publish over {@code mount --bind} at 1 000 lines from 0.31 to 1.6, and an
   * fsync'd write to the disk on every publish took it up by 60–117 %.
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
   * The ratios this run's rows allow (a phase not run gives none of its ratios), the server's start
   * over its reference's ({@link Starts}) and each server's memory after the run's calls over its
   * memory idle. Memory is a ratio to itself so that the machine's page size, JDK build and libc drop
   * out; what is left is what the calls made the process keep.
   */
  static List<Ratio> ratios(List<Result> results, List<Footprint> footprints, Starts starts) {
    List<Ratio> out = ratios(results);
    out.add(new Ratio("start → Probe ready / " + Starts.REFERENCE, "start", Starts.REFERENCE,
        (double) starts.serverMillis() / Math.max(1, starts.referenceMillis())));
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
      // Every latency's reference is a figure of its own size measured in the same loop: mount --bind
      // and umount as processes (about 2 ms), or Probe. The in-process bind is no reference: at 25 to
      // 70 µs its p50 moved 2.7 times between runs of one harness, and every ratio over it with it.
      String side = r.side().equals("client") ? "" : " (server)";
      over(results, r, NodeLatencyHarness.BIND_PROCESS, NodeLatencyHarness.PUBLISH, "publish" + side + " / mount --bind",
          at, out);
      over(results, r, NodeLatencyHarness.UNBIND_PROCESS, NodeLatencyHarness.UNPUBLISH,
          "unpublish" + side + " / umount", at, out);
      if (side.isEmpty()) {
        over(results, r, NodeLatencyHarness.PROBE, NodeLatencyHarness.STATS, "stats / Probe", at, out);
        over(results, r, NodeLatencyHarness.BIND_PROCESS, NodeLatencyHarness.PROBE, "Probe / mount --bind", at, out);
      }
    }
    return out;
  }

  /** The ratios a result file (or a baseline) holds, in its order. */
  static List<Ratio> ratiosOf(Map<?, ?> json) {
    List<Ratio> out = new ArrayList<>();
    ((Map<?, ?>) json.get("ratios")).forEach((k, v) -> out.add(new Ratio((String) k, "", "", ((Number) v).doubleValue())));
    return out;
  }

  /**
   * Each ratio's median over several runs' ratios (the lower middle one for an even count), in the
   * first run's order; a ratio some run lacks is left out, so that the comparison reports it missing.
   */
  static List<Ratio> median(List<List<Ratio>> runs) {
    List<Ratio> out = new ArrayList<>();
    for (Ratio first : runs.getFirst()) {
      List<Ratio> all = runs.stream().flatMap(run -> run.stream().filter(r -> r.key().equals(first.key()))).toList();
      if (all.size() == runs.size()) {
        double[] values = all.stream().mapToDouble(Ratio::value).sorted().toArray();
        out.add(new Ratio(first.key(), first.cost(), first.reference(), values[(values.length - 1) / 2]));
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
      List<Result> results, List<Footprint> footprints, Starts starts, List<Ratio> ratios) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("machine", machine);
    m.put("load_before", loadBefore);
    m.put("load_after", loadAfter);
    m.put("seconds", Math.round(seconds));
    m.put("rows", results.stream().map(Result::json).toList());
    m.put("start_ms", starts.serverMillis());
    m.put("caravan_version_ms", starts.referenceMillis());
    m.put("footprints", footprints.stream().map(Footprint::json).toList());
    Map<String, Object> r = new LinkedHashMap<>();
    ratios.forEach(x -> r.put(x.key(), x.value()));
    m.put("ratios", r);
    return m;
  }

  /**
   * Compares {@code ratios} with the baseline's (a result file of an earlier run: its "ratios"), prints
   * a table of every ratio and returns the keys of those that grew beyond {@code tolerance} or are
   * missing: none when the run passes.
   */
  static Set<String> compare(Path baselineFile, List<Ratio> ratios, double tolerance, PrintStream out)
      throws IOException {
    Map<?, ?> baseline = (Map<?, ?>) ((Map<?, ?>) Json.parse(Files.readString(baselineFile))).get("ratios");
    Map<String, Double> now = new LinkedHashMap<>();
    ratios.forEach(r -> now.put(r.key(), r.value()));
    Set<String> failed = new LinkedHashSet<>();
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
        failed.add(key);
        out.printf(Locale.ROOT, "| %s | %.3f | – | – | **FAIL: not measured** |%n", key, base);
        continue;
      }
      boolean worse = value > base * (1 + tolerance);
      if (worse) {
        failed.add(key);
      }
      out.printf(Locale.ROOT, "| %s | %.3f | %.3f | %+.0f %% | %s |%n", key, base, value, (value / base - 1) * 100,
          worse ? "**FAIL: slower**" : "ok");
    }
    for (Map.Entry<String, Double> e : now.entrySet()) {
      if (!baseline.containsKey(e.getKey())) {
        out.printf(Locale.ROOT, "| %s | – | %.3f | – | new (not in the baseline) |%n", e.getKey(), e.getValue());
      }
    }
    out.println();
    out.println(failed.isEmpty() ? "this run: every ratio within its limit"
        : "this run: over the limit: " + String.join(", ", failed));
    return failed;
  }
}
