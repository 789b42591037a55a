package dev.caravan.storage.file;

import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.internal.sys.NativeAccess;
import java.nio.file.Path;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Whole-file replacement that a crash cannot leave half-done: {@link #write} (durable), or {@link
 * #replace} for state that a power loss makes moot anyway.
 */
public final class AtomicFiles {
  private static final int MODE = 0644;

  private AtomicFiles() {}

  /**
   * Replaces {@code file}'s content: writes a temporary file beside it, syncs it, renames it over
   * {@code file} and syncs the directory. Readers see the old content or the new, never a mix;
   * after a crash the file holds one or the other.
   */
  public static void write(Path file, byte[] content) {
    NativeAccess.require();
    writeAndRename(file, content, true);
    Durability.syncDirectoryOf(file);
  }

  /**
   * Replaces {@code file}'s content like {@link #write} but without either sync: writes a temporary
   * file beside it and renames it over {@code file}. Other processes, and this one after a crash or
   * {@code kill -9} of the writer, see the old content or the new, never a mix, because the page
   * cache outlives the process. After a power loss or kernel crash the file may hold the old content,
   * the new, or be empty or garbled (the rename can reach the disk before the data), so readers must
   * treat an unreadable file as absent.
   *
   * <p>Use it only for state that describes things a power loss or kernel crash destroys anyway (mounts,
   * loop devices: the node journal), where the fsyncs of {@link #write} buy nothing and cost two
   * journal commits per call. Anything that must survive power loss (volume metadata) uses {@link
   * #write}.
   */
  public static void replace(Path file, byte[] content) {
    NativeAccess.require();
    writeAndRename(file, content, false);
  }

  private static void writeAndRename(Path file, byte[] content, boolean sync) {
    String random = Long.toHexString(ThreadLocalRandom.current().nextLong());
    Path temp = file.resolveSibling("." + file.getFileName() + ".tmp-" + random);
    Fd fd = SparseFiles.createNew(temp, MODE);
    try {
      try (fd) {
        Libc.pwriteFully(fd, content, 0);
        if (sync) {
          Libc.fsync(fd);
        }
      }
      Libc.rename(temp, file);
    } catch (RuntimeException e) {
      throw Durability.removeAfter(temp, e);
    }
  }
}
