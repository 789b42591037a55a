package dev.caravan.benchmarks.harness;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * One server's start and memory in a run: from exec to the first Probe that answers ready, its VmRSS
 * idle (shortly after that Probe, before any other call) and after the run's calls.
 */
record Footprint(String server, int table, int mountLines, long startMillis, long idleKiB, long afterKiB,
    long calls) {
  static String header() {
    return "| server | mount lines | start → Probe ready ms | VmRSS idle MiB | VmRSS after MiB | calls |\n"
        + "|---|---:|---:|---:|---:|---:|";
  }

  String row() {
    return String.format(Locale.ROOT, "| %s | %d | %d | %.1f | %.1f | %d |", server.isEmpty() ? "-" : server,
        mountLines, startMillis, idleKiB / 1024.0, afterKiB / 1024.0, calls);
  }

  Map<String, Object> json() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("server", server);
    m.put("mount_table", table);
    m.put("mount_lines", mountLines);
    m.put("start_ms", startMillis);
    m.put("vmrss_idle_kib", idleKiB);
    m.put("vmrss_after_kib", afterKiB);
    m.put("calls", calls);
    return m;
  }
}
