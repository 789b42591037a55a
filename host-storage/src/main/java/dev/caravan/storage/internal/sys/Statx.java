package dev.caravan.storage.internal.sys;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.SyscallException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Which mount a path is in, and whether it is that mount's root, by one {@code statx(2)} with
 * {@code STATX_MNT_ID} and {@code STATX_ATTR_MOUNT_ROOT} (Linux 5.8): what "is this a mount point"
 * costs without reading {@code /proc/self/mountinfo}, whose read grows with the host's mount count.
 * The struct offsets are the kernel's {@code struct statx} (include/uapi/linux/stat.h), the same on
 * every architecture.
 *
 * @param mountId the mount's id, as the first field of mountinfo shows it
 * @param mountRoot the path is the root of that mount: something is mounted exactly there
 * @param symlink the path itself is a symlink (never followed: it is not where anything is mounted)
 */
public record Statx(int mountId, boolean mountRoot, boolean symlink) {
  private static final int AT_FDCWD = -100;
  private static final int AT_SYMLINK_NOFOLLOW = 0x100;
  private static final int AT_NO_AUTOMOUNT = 0x800;
  private static final int AT_EMPTY_PATH = 0x1000;
  private static final int STATX_TYPE = 0x1;
  private static final int STATX_MNT_ID = 0x1000;
  private static final long STATX_ATTR_MOUNT_ROOT = 0x2000;
  private static final int S_IFMT = 0170000;
  private static final int S_IFLNK = 0120000;
  private static final long SIZE = 256;
  private static final long OFFSET_MASK = 0;
  private static final long OFFSET_ATTRIBUTES = 8;
  private static final long OFFSET_MODE = 28;
  private static final long OFFSET_ATTRIBUTES_MASK = 56;
  private static final long OFFSET_MNT_ID = 144;

  // Holder classes: each downcall stub is made on its first call, not at start-up (see Libc).
  private static final class StatxHandle {
    static final MethodHandle HANDLE =
        Libc.syscall("statx", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, ADDRESS);
  }

  /**
   * The mount {@code path} is in (parents resolved, the last component not followed, no automount
   * triggered); empty when the path does not exist. Call only when {@link #supported()}: on an older
   * kernel (no statx, or one without {@code STATX_MNT_ID} or {@code STATX_ATTR_MOUNT_ROOT}) this
   * throws, and callers read mountinfo instead.
   */
  public static Optional<Statx> of(Path path) {
    return query(AT_FDCWD, path.toString(), AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, path);
  }

  /**
   * The mount the file {@code fd} refers to is in ({@code AT_EMPTY_PATH}): no name is looked up, so
   * this is about exactly what the descriptor was opened on. Needs {@link #supported()}.
   */
  public static Statx of(Fd fd) {
    return query(fd.number(), "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT, fd)
        .orElseThrow(() -> new StorageException("statx of the open file " + fd + " found nothing"));
  }

  private static Optional<Statx> query(int dirFd, String path, int flags, Object label) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment cPath = arena.allocateFrom(path);
      MemorySegment buffer = arena.allocate(SIZE, 8);
      try {
        Libc.call(arena,
            state -> (int) StatxHandle.HANDLE.invokeExact(state, dirFd, cPath, flags, STATX_TYPE | STATX_MNT_ID, buffer),
            "statx", label);
      } catch (SyscallException e) {
        if (e.errno() == Errno.ENOENT) {
          return Optional.empty();
        }
        throw e;
      }
      int mask = buffer.get(JAVA_INT, OFFSET_MASK);
      long attributesMask = buffer.get(JAVA_LONG, OFFSET_ATTRIBUTES_MASK);
      if ((mask & STATX_MNT_ID) == 0 || (attributesMask & STATX_ATTR_MOUNT_ROOT) == 0) {
        throw new StorageException("statx of " + label + " does not report the mount id and the mount-root"
            + " attribute on this kernel (Linux 5.8 added them)");
      }
      int mode = Short.toUnsignedInt(buffer.get(JAVA_SHORT, OFFSET_MODE));
      return Optional.of(new Statx(
          (int) buffer.get(JAVA_LONG, OFFSET_MNT_ID),
          (buffer.get(JAVA_LONG, OFFSET_ATTRIBUTES) & STATX_ATTR_MOUNT_ROOT) != 0,
          (mode & S_IFMT) == S_IFLNK));
    }
  }

  /**
   * Whether this kernel answers {@link #of} for existing paths: statx with the mount id and the
   * mount-root attribute (asked of {@code /}, once).
   */
  public static boolean supported() {
    return Support.SUPPORTED;
  }

  private static final class Support {
    static final boolean SUPPORTED = probe();

    private static boolean probe() {
      try {
        return of(Path.of("/")).isPresent();
      } catch (StorageException e) {
        return false; // no STATX_MNT_ID (before Linux 5.8), ENOSYS (a kernel before 4.11) or a seccomp filter refusing it
      }
    }
  }
}
