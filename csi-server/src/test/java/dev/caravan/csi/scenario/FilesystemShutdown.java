package dev.caravan.csi.scenario;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.caravan.bindings.linux.LinuxUapi;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;

/**
 * What a power loss does to a mounted ext4 filesystem, as far as a test on a running kernel can make
 * it happen: the shutdown ioctl ({@code EXT4_IOC_SHUTDOWN}) with {@code EXT4_GOING_FLAGS_NOLOGFLUSH},
 * which is how xfstests' godown simulates a crash. The journal is aborted without writing what is
 * still only in memory, and from then on every write and fsync on the filesystem fails with EIO, so
 * nothing that had not reached the device by then ever does; the next mount replays the journal.
 *
 * <p>Test-only, on purpose: Caravan never shuts a filesystem down, so host-storage's API has no call
 * for it (its {@code FIFREEZE} is for stalls, which end). The FFM call follows host-storage's Libc.
 */
final class FilesystemShutdown {
  /** {@code _IOR('X', 125, __u32)} in linux/ext4.h (the number of XFS_IOC_GOINGDOWN too). */
  static final long EXT4_IOC_SHUTDOWN = 0x8004587DL;
  /** Shut down at once; do not write the journal's pending transactions first. */
  static final int EXT4_GOING_FLAGS_NOLOGFLUSH = 0x2;

  private static final Linker LINKER = Linker.nativeLinker();
  private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
  private static final VarHandle ERRNO = CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
  private static final MethodHandle OPEN = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("open"),
      FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), Linker.Option.captureCallState("errno"),
      Linker.Option.firstVariadicArg(2));
  private static final MethodHandle IOCTL = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("ioctl"),
      FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS), Linker.Option.captureCallState("errno"),
      Linker.Option.firstVariadicArg(2));
  private static final MethodHandle CLOSE = LINKER.downcallHandle(LINKER.defaultLookup().findOrThrow("close"),
      FunctionDescriptor.of(JAVA_INT, JAVA_INT));

  private FilesystemShutdown() {}

  /**
   * Does nothing but load this class, linking its downcalls: in the guest that takes a noticeable
   * time, which would otherwise come between the moment a test reads "now" and the shutdown itself.
   */
  static void link() {}

  /** Shuts down the filesystem mounted at {@code mountPoint} without flushing its journal. Needs CAP_SYS_ADMIN. */
  static void withoutLogFlush(Path mountPoint) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment state = arena.allocate(CALL_STATE);
      int fd = (int) OPEN.invokeExact(state, arena.allocateFrom(mountPoint.toString()),
          LinuxUapi.O_RDONLY() | LinuxUapi.O_DIRECTORY() | LinuxUapi.O_CLOEXEC(), 0);
      if (fd < 0) {
        throw new AssertionError("open " + mountPoint + ": errno " + (int) ERRNO.get(state, 0L));
      }
      try {
        MemorySegment flags = arena.allocateFrom(JAVA_INT, EXT4_GOING_FLAGS_NOLOGFLUSH);
        if ((int) IOCTL.invokeExact(state, fd, EXT4_IOC_SHUTDOWN, flags) != 0) {
          throw new AssertionError("EXT4_IOC_SHUTDOWN on " + mountPoint + ": errno " + (int) ERRNO.get(state, 0L));
        }
      } finally {
        int unused = (int) CLOSE.invokeExact(fd); // a close error changes nothing: the filesystem is down
      }
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable e) {
      throw new AssertionError(e);
    }
  }
}
