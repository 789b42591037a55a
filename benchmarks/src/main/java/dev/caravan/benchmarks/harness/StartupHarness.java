package dev.caravan.benchmarks.harness;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * How long {@code caravan serve} (through {@code bin/caravan}, file backend, empty data directory)
 * takes from process start to answering Probe ready=true over its socket, and its resident memory
 * once idle. Each run starts a fresh process on a fresh socket and data directory, polls Probe (see
 * {@link ServerProcess#awaitProbeReady}), waits {@code --settle-seconds}, reads VmRSS from
 * /proc/&lt;pid&gt;/status and stops the server with SIGTERM. The first {@code --warmup} runs are
 * not counted: they load this client's own gRPC classes and warm the page cache for the JDK and jar.
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar dev.caravan.benchmarks.harness.StartupHarness \
 *     [--runs 10] [--warmup 1] [--settle-seconds 5] [--jar csi-server/target/caravan.jar]
 * </pre>
 * Set CARAVAN_JAVA_OPTS / CARAVAN_AOT in the environment to try JVM options; bin/caravan reads them.
 */
public final class StartupHarness {
  private StartupHarness() {}

  public static void main(String[] args) throws Exception {
    Options o = new Options(args, Map.of("runs", "10", "warmup", "1", "settle-seconds", "5", "launcher", "",
        "jar", "", "serve-args", "", "work-dir", System.getProperty("java.io.tmpdir")));
    Machine.requireRoot();
    Machine.quietClientLogs();
    System.out.println("startup harness: " + Machine.describe() + " (before)");
    Path launcher = o.launcher();
    int runs = o.integer("runs");
    int warmup = o.integer("warmup");
    Samples ready = new Samples("serve → Probe ready", runs);
    List<Map<String, Long>> memory = new ArrayList<>();
    for (int i = 0; i < warmup + runs; i++) {
      Path work = Files.createTempDirectory(Path.of(o.get("work-dir")), "caravan-bench-start-");
      try {
        long nanos;
        Map<String, Long> rss;
        try (ServerProcess server = ServerProcess.start(launcher, work, o.serverEnv(), o.serveArgs())) {
          nanos = server.awaitProbeReady(Duration.ofSeconds(60));
          TimeUnit.SECONDS.sleep(o.integer("settle-seconds"));
          rss = server.rss();
        }
        System.out.printf(Locale.ROOT, "run %d%s: Probe ready after %.0f ms; idle memory (KiB) %s%n", i,
            i < warmup ? " (warm-up, not counted)" : "", nanos / 1e6, rss);
        if (i >= warmup) {
          ready.add(nanos);
          memory.add(rss);
        }
      } finally {
        delete(work);
      }
    }
    System.out.println();
    System.out.printf(Locale.ROOT, "serve → Probe ready, ms: min %.0f, median %.0f, max %.0f, mean %.0f (n=%d)%n",
        ready.percentile(0) / 1e6, ready.percentile(50) / 1e6, ready.percentile(100) / 1e6, ready.mean() / 1e6,
        ready.count());
    for (String key : List.of("VmRSS", "RssAnon", "RssFile", "VmHWM")) {
      List<Long> v = memory.stream().map(m -> m.getOrDefault(key, -1L)).sorted().toList();
      System.out.printf(Locale.ROOT, "idle %s, MiB: min %.1f, median %.1f, max %.1f%n", key, v.get(0) / 1024.0,
          v.get(v.size() / 2) / 1024.0, v.get(v.size() - 1) / 1024.0);
    }
    System.out.println("startup harness: load average " + Machine.load() + " (after)");
  }

  private static void delete(Path work) throws IOException {
    try (Stream<Path> paths = Files.walk(work)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
