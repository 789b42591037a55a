package dev.caravan.csi.scenario;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;

/**
 * What each failover scenario measured, one tab-separated line per run (mode, backend, time to
 * recover in ms, outcome) in {@code target/failover/results.tsv} of the directory the tests run in:
 * the numbers behind docs/failover.md's recovery column.
 */
final class FailoverReport {
  private FailoverReport() {}

  static void record(int mode, String backend, String outcome, Duration recovery) {
    Path file = Path.of("target", "failover", "results.tsv");
    String line = mode + "\t" + backend + "\t" + recovery.toMillis() + "\t" + outcome + "\n";
    try {
      Files.createDirectories(file.getParent());
      Files.writeString(file, line, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    System.out.print("failover: " + line);
  }
}
