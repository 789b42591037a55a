package dev.caravan.csi.peer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Optional;

/** Small state files of a node's peer directory, each replaced atomically and synced with its directory. */
final class StateFiles {
  private StateFiles() {}

  static Optional<String> read(Path file) {
    try {
      return Files.exists(file) ? Optional.of(Files.readString(file, StandardCharsets.UTF_8)) : Optional.empty();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read " + file, e);
    }
  }

  /** Replaces {@code file} with {@code text}; durable when it returns. */
  static void write(Path file, String text) {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    try {
      Files.createDirectories(file.getParent());
      try (FileChannel c = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
          StandardOpenOption.TRUNCATE_EXISTING)) {
        c.write(StandardCharsets.UTF_8.encode(text));
        c.force(true);
      }
      Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      syncDir(file.getParent());
    } catch (IOException e) {
      throw new UncheckedIOException("cannot write " + file, e);
    }
  }

  /** Removes {@code file}; durable when it returns. */
  static void delete(Path file) {
    try {
      if (Files.deleteIfExists(file)) {
        syncDir(file.getParent());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot remove " + file, e);
    }
  }

  private static void syncDir(Path dir) throws IOException {
    try (FileChannel c = FileChannel.open(dir, StandardOpenOption.READ)) {
      c.force(true);
    }
  }
}
