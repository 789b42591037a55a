package dev.caravan.benchmarks.harness;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A server's start, from exec to the first Probe that answers ready, and its reference: the wall time
 * of {@code <launcher> version}, the same launcher script, JVM flags and jar up to the CLI printing
 * the version and exiting. Their ratio is what {@code serve} adds to a start of this jar (gRPC and its
 * transport, the backend, the journal's reconcile), which is what a change to the server moves; a
 * change that slows every start of the jar alike (a JVM flag, a larger jar) moves both, and this ratio
 * does not see it.
 *
 * <p>The reference is a start of the same kind, not {@code java -version}: other load delays a 30 ms
 * process far more, in proportion, than a start that spends most of a second loading and verifying
 * classes. On a quiet 2-CPU machine the start read 28–31 times {@code java -version} and 3.2–3.4 times
 * {@code caravan version}; with two busy loops beside the harness, 18 and 2.9–3.1.
 * The two kinds of start alternate, a reference and then a server, so a change of load during the
 * measurement reaches both; each figure is the median of its five.
 */
record Starts(long serverMillis, long referenceMillis) {
  static final int RUNS = 5;
  static final String REFERENCE = "caravan version";

  static Starts measure(Path launcher, Path base, Map<String, String> env, List<String> serveArgs)
      throws IOException, InterruptedException {
    Samples servers = new Samples("start → Probe ready", RUNS);
    Samples references = new Samples(REFERENCE, RUNS);
    for (int i = 0; i < RUNS; i++) {
      references.add(versionNanos(launcher, env));
      Path work = Files.createDirectories(base.resolve("start-" + i));
      try (ServerProcess server = ServerProcess.start(launcher, work, env, serveArgs)) {
        servers.add(server.awaitProbeReady(Duration.ofSeconds(60)));
      }
    }
    return new Starts(TimeUnit.NANOSECONDS.toMillis(servers.percentile(50)),
        TimeUnit.NANOSECONDS.toMillis(references.percentile(50)));
  }

  private static long versionNanos(Path launcher, Map<String, String> env) throws IOException, InterruptedException {
    ProcessBuilder pb = new ProcessBuilder(launcher.toString(), "version").redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
    pb.environment().putAll(env);
    long start = System.nanoTime();
    Process p = pb.start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IllegalStateException(launcher + " version did not exit within 60 s");
    }
    long took = System.nanoTime() - start;
    if (p.exitValue() != 0) {
      throw new IllegalStateException(launcher + " version exited with " + p.exitValue());
    }
    return took;
  }
}
