package dev.caravan.storage.file;

import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Libc;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;

/** Whole-file replacement that a crash cannot leave half-done. */
public final class AtomicFiles {
  private static final int MODE = 0644;

  private AtomicFiles() {}

  /**
   * Replaces {@code file}'s content: writes a temporary file beside it, syncs it, renames it over
   * {@code file} and syncs the directory. Readers see the old content or the new, never a mix;
   * after a crash the file holds one or the other.
   */
  public static void write(Path file, byte[] content) {
    String random = Long.toHexString(ThreadLocalRandom.current().nextLong());
    Path temp = file.resolveSibling("." + file.getFileName() + ".tmp-" + random);
    Fd fd = SparseFiles.createNew(temp, MODE);
    try {
      try (fd) {
        Libc.pwriteFully(fd, content, 0);
        Libc.fsync(fd);
      }
      Libc.rename(temp, file);
    } catch (RuntimeException e) {
      throw Durability.removeAfter(temp, e);
    }
    Durability.syncDirectoryOf(file);
  }
}
