package dev.caravan.csi.node;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;

/** When this host booted: the {@code btime} line of /proc/stat (see proc_stat(5)). */
final class BootTime {
  private static final Path PROC_STAT = Path.of("/proc/stat");

  private BootTime() {}

  /**
   * The boot time; the epoch when it cannot be read, so that nothing counts as older than this boot
   * (the cautious answer for what depends on it).
   */
  static Instant get() {
    try {
      for (String line : Files.readAllLines(PROC_STAT, StandardCharsets.UTF_8)) {
        if (line.startsWith("btime ")) {
          return Instant.ofEpochSecond(Long.parseLong(line.substring("btime ".length()).strip()));
        }
      }
    } catch (IOException | NumberFormatException e) {
      // fall through: unknown
    }
    return Instant.EPOCH;
  }
}
