package dev.caravan.benchmarks.harness;

import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/**
 * The reference for a server's start: the wall time of {@code java -version} from the JDK this
 * harness runs on (the one bin/caravan finds, through the same scripts/jdk25.sh), the least work a
 * JVM start does. The median of a few, so one slow start does not set it.
 */
final class JvmStart {
  private static final int RUNS = 5;

  private JvmStart() {}

  static long medianMillis() throws IOException, InterruptedException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Samples starts = new Samples("java -version", RUNS);
    for (int i = 0; i < RUNS; i++) {
      long start = System.nanoTime();
      Process p = new ProcessBuilder(java, "-version").redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      if (!p.waitFor(60, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException(java + " -version did not exit within 60 s");
      }
      starts.add(System.nanoTime() - start);
    }
    return TimeUnit.NANOSECONDS.toMillis(starts.percentile(50));
  }
}
