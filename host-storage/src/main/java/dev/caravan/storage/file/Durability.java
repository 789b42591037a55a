package dev.caravan.storage.file;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Libc;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The steps that make a new or renamed file survive a crash. */
final class Durability {
  private Durability() {}

  /** A new name is durable only once its directory is synced, not just the file. */
  static void syncDirectoryOf(Path file) {
    try (Fd dir =
        Libc.open(
            file.toAbsolutePath().getParent(), LinuxUapi.O_RDONLY() | LinuxUapi.O_DIRECTORY())) {
      Libc.fsync(dir);
    }
  }

  /**
   * Removes what a failed operation left half-written; the original failure stays the one thrown.
   */
  static RuntimeException removeAfter(Path file, RuntimeException failure) {
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      failure.addSuppressed(e);
    }
    return failure;
  }
}
