package dev.caravan.csi.dhv;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** What the DHV tests do to a plugin's state directory to stand for its loss. */
final class Trees {
  private Trees() {}

  /** Deletes {@code dir} and everything below it (nothing may be mounted there). */
  static void delete(Path dir) throws IOException {
    try (Stream<Path> all = Files.walk(dir)) {
      for (Path p : all.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }
}
