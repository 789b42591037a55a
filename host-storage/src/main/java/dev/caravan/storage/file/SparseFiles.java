package dev.caravan.storage.file;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.SyscallException;
import dev.caravan.storage.internal.sys.Errno;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.FileCopy;
import dev.caravan.storage.internal.sys.Ioctl;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.internal.sys.NativeAccess;
import java.nio.file.Path;
import java.util.Set;

/**
 * Sparse files as volume images: created, grown and cloned without writing their holes, and made
 * durable (file and directory synced) before returning.
 */
public final class SparseFiles {
  /** How {@link #cloneFile} copied. */
  public enum CopyMethod {
    /** Blocks are shared with the source until either side writes (FICLONE). */
    REFLINK,
    /** Only the source's data ranges were copied; its holes stay holes. */
    SPARSE_COPY
  }

  // FICLONE's answers for "not on this filesystem" or "not between these two files".
  private static final Set<Integer> NO_REFLINK =
      Set.of(Errno.EOPNOTSUPP, Errno.EXDEV, Errno.EINVAL);
  private static final int MODE = 0600;

  private SparseFiles() {}

  /** Creates {@code file}, which must not exist, with {@code sizeBytes} and no blocks allocated. */
  public static void create(Path file, long sizeBytes) {
    NativeAccess.require();
    Fd fd = createNew(file, MODE);
    try (fd) {
      Libc.ftruncate(fd, sizeBytes);
      Libc.fsync(fd);
    } catch (RuntimeException e) {
      throw Durability.removeAfter(file, e);
    }
    Durability.syncDirectoryOf(file);
  }

  /**
   * Grows {@code file} to {@code newSizeBytes}; the new tail is a hole. Same size does nothing.
   *
   * @throws IllegalArgumentException if that would shrink the file
   */
  public static void grow(Path file, long newSizeBytes) {
    NativeAccess.require();
    try (Fd fd = Libc.open(file, LinuxUapi.O_WRONLY())) {
      long size = Libc.fstat(fd).size();
      if (newSizeBytes < size) {
        throw new IllegalArgumentException(
            "cannot shrink " + file + " from " + size + " to " + newSizeBytes + " bytes");
      }
      if (newSizeBytes > size) {
        Libc.ftruncate(fd, newSizeBytes);
        Libc.fsync(fd);
      }
    }
  }

  /**
   * Copies {@code source} to {@code target}, which must not exist, keeping the source's
   * permissions. Shares blocks (reflink) where the filesystem can; otherwise copies only the
   * source's data ranges (SEEK_DATA/SEEK_HOLE) with copy_file_range.
   */
  public static CopyMethod cloneFile(Path source, Path target) {
    NativeAccess.require();
    CopyMethod method;
    try (Fd in = Libc.open(source, LinuxUapi.O_RDONLY())) {
      Fd out = createNew(target, Libc.fstat(in).mode() & 07777);
      try (out) {
        method = reflink(in, out) ? CopyMethod.REFLINK : sparseCopy(in, out);
        Libc.fsync(out);
      } catch (RuntimeException e) {
        throw Durability.removeAfter(target, e);
      }
    }
    Durability.syncDirectoryOf(target);
    return method;
  }

  /** Bytes the file really occupies on disk: less than its size when it has holes. */
  public static long allocatedBytes(Path file) {
    NativeAccess.require();
    return Libc.stat(file).allocatedBytes();
  }

  static Fd createNew(Path file, int mode) {
    return Libc.open(file, LinuxUapi.O_WRONLY() | LinuxUapi.O_CREAT() | LinuxUapi.O_EXCL(), mode);
  }

  private static boolean reflink(Fd in, Fd out) {
    try {
      Libc.ioctl(out, Ioctl.FICLONE, in.number());
      return true;
    } catch (SyscallException e) {
      if (NO_REFLINK.contains(e.errno())) {
        return false;
      }
      throw e;
    }
  }

  private static CopyMethod sparseCopy(Fd in, Fd out) {
    long size = Libc.fstat(in).size();
    Libc.ftruncate(out, size);
    for (long offset = 0; offset < size; ) {
      long data;
      try {
        data = Libc.lseek(in, offset, LinuxUapi.SEEK_DATA());
      } catch (SyscallException e) {
        if (e.errno() == Errno.ENXIO) {
          break; // only a hole is left
        }
        throw e;
      }
      long hole = Libc.lseek(in, data, LinuxUapi.SEEK_HOLE());
      FileCopy.range(in, out, data, hole - data);
      offset = hole;
    }
    return CopyMethod.SPARSE_COPY;
  }
}
