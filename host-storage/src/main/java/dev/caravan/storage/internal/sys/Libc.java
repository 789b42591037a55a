package dev.caravan.storage.internal.sys;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.SyscallException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * The system calls host-storage makes, as glibc downcalls. Each one captures {@code errno} at the
 * call (anything the JVM does afterwards may overwrite it) and turns a failure into a {@link
 * SyscallException} that names the errno, the operation and its arguments. Each call uses its own
 * confined arena, so no native memory outlives the call.
 */
public final class Libc {
  private static final Linker LINKER = Linker.nativeLinker();
  private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
  private static final VarHandle ERRNO =
      CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));

  // One holder class per downcall handle: making a handle generates its stub (a class, and the
  // method handles around it), and making all of them at once was the largest part of the plugin's
  // start-up. A holder is initialised on its first call, so start-up makes only the stubs it calls,
  // while each handle stays a constant the JIT can inline.
  private static final class Open {
    static final MethodHandle HANDLE = Syscalls.variadic("open", 2, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT);
  }

  private static final class Close {
    static final MethodHandle HANDLE = syscall("close", JAVA_INT, JAVA_INT);
  }

  // ioctl is variadic, and the third argument's type is part of the call: one handle per shape.
  private static final class IoctlLong {
    static final MethodHandle HANDLE =
        Syscalls.variadic("ioctl", 2, JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG);
  }

  private static final class IoctlPointer {
    static final MethodHandle HANDLE = Syscalls.variadic("ioctl", 2, JAVA_INT, JAVA_INT, JAVA_LONG, ADDRESS);
  }

  private static final class Mount {
    static final MethodHandle HANDLE =
        syscall("mount", JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, ADDRESS);
  }

  private static final class Umount2 {
    static final MethodHandle HANDLE = syscall("umount2", JAVA_INT, ADDRESS, JAVA_INT);
  }

  private static final class StatvfsHandle {
    static final MethodHandle HANDLE = syscall("statvfs", JAVA_INT, ADDRESS, ADDRESS);
  }

  private static final class StatHandle {
    static final MethodHandle HANDLE = syscall("stat", JAVA_INT, ADDRESS, ADDRESS);
  }

  private static final class Fstat {
    static final MethodHandle HANDLE = syscall("fstat", JAVA_INT, JAVA_INT, ADDRESS);
  }

  private static final class Fsync {
    static final MethodHandle HANDLE = syscall("fsync", JAVA_INT, JAVA_INT);
  }

  private static final class Ftruncate {
    static final MethodHandle HANDLE = syscall("ftruncate", JAVA_INT, JAVA_INT, JAVA_LONG);
  }

  private static final class Lseek {
    static final MethodHandle HANDLE = syscall("lseek", JAVA_LONG, JAVA_INT, JAVA_LONG, JAVA_INT);
  }

  private static final class CopyFileRange {
    static final MethodHandle HANDLE =
        syscall( "copy_file_range", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT);
  }

  private static final class Pread {
    static final MethodHandle HANDLE = syscall("pread", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG);
  }

  private static final class Pwrite {
    static final MethodHandle HANDLE = syscall("pwrite", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG);
  }

  private static final class Rename {
    static final MethodHandle HANDLE = syscall("rename", JAVA_INT, ADDRESS, ADDRESS);
  }

  private static final class Pipe2 {
    static final MethodHandle HANDLE = syscall("pipe2", JAVA_INT, ADDRESS, JAVA_INT);
  }

  // For descriptors without a file position: a pseudo-terminal (Pty), a pipe (zfs streams).
  private static final class Read {
    static final MethodHandle HANDLE = syscall("read", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG);
  }

  private static final class Write {
    static final MethodHandle HANDLE = syscall("write", JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG);
  }

  private static final class Strerror {
    static final MethodHandle HANDLE =
        LINKER.downcallHandle( LINKER.defaultLookup().findOrThrow("strerror"), FunctionDescriptor.of(ADDRESS, JAVA_INT));
  }

  private Libc() {}

  public static Fd open(Path path, int flags) {
    return open(path, flags, 0);
  }

  /** Opens with {@code O_CLOEXEC} always added: no descriptor of ours may leak into a child. */
  public static Fd open(Path path, int flags, int mode) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment cPath = arena.allocateFrom(path.toString());
      int fd =
          (int)
              call(
                  arena,
                  state ->
                      (int) Open.HANDLE.invokeExact(state, cPath, flags | LinuxUapi.O_CLOEXEC(), mode),
                  "open",
                  path,
                  hex(flags));
      return new Fd(fd, path.toString());
    }
  }

  static void close(Fd fd) {
    try (Arena arena = Arena.ofConfined()) {
      call(arena, state -> (int) Close.HANDLE.invokeExact(state, fd.number()), "close", fd);
    }
  }

  /** An ioctl whose argument is a number (or unused); returns what the ioctl returns. */
  public static long ioctl(Fd fd, Ioctl request, long argument) {
    try (Arena arena = Arena.ofConfined()) {
      return call(
          arena,
          state -> (int) IoctlLong.HANDLE.invokeExact(state, fd.number(), request.request(), argument),
          "ioctl",
          fd,
          request,
          argument);
    }
  }

  /** An ioctl that reads or writes the struct at {@code argument}. */
  public static void ioctl(Fd fd, Ioctl request, MemorySegment argument) {
    try (Arena arena = Arena.ofConfined()) {
      call(
          arena,
          state -> (int) IoctlPointer.HANDLE.invokeExact(state, fd.number(), request.request(), argument),
          "ioctl",
          fd,
          request);
    }
  }

  /** An ioctl that writes one 64-bit value, like {@code BLKGETSIZE64}; returns that value. */
  public static long ioctlReadLong(Fd fd, Ioctl request) {
    try (KernelBuffers buffers = new KernelBuffers()) {
      MemorySegment value = buffers.allocate("64-bit value", JAVA_LONG);
      buffers.ioctl(fd, request, value);
      return value.get(JAVA_LONG, 0);
    }
  }

  /** {@code source}, {@code fsType} and {@code data} may be null, as mount(2) allows. */
  public static void mount(String source, Path target, String fsType, long flags, String data) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment cSource = cString(arena, source);
      MemorySegment cTarget = arena.allocateFrom(target.toString());
      MemorySegment cType = cString(arena, fsType);
      MemorySegment cData = cString(arena, data);
      Object[] arguments =
          data == null || data.isEmpty()
              ? new Object[] {source, target, fsType, hex(flags)}
              : new Object[] {source, target, fsType, hex(flags), data};
      call(
          arena,
          state -> (int) Mount.HANDLE.invokeExact(state, cSource, cTarget, cType, flags, cData),
          "mount",
          arguments);
    }
  }

  public static void umount2(Path target, int flags) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment cTarget = arena.allocateFrom(target.toString());
      call(
          arena,
          state -> (int) Umount2.HANDLE.invokeExact(state, cTarget, flags),
          "umount2",
          target,
          hex(flags));
    }
  }

  public static Statvfs statvfs(Path path) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment cPath = arena.allocateFrom(path.toString());
      MemorySegment buffer = arena.allocate(dev.caravan.bindings.linux.statvfs.layout());
      call(arena, state -> (int) StatvfsHandle.HANDLE.invokeExact(state, cPath, buffer), "statvfs", path);
      return Statvfs.read(buffer);
    }
  }

  public static Stat stat(Path path) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment cPath = arena.allocateFrom(path.toString());
      MemorySegment buffer = arena.allocate(Stat.LAYOUT);
      call(arena, state -> (int) StatHandle.HANDLE.invokeExact(state, cPath, buffer), "stat", path);
      return Stat.read(buffer);
    }
  }

  public static Stat fstat(Fd fd) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment buffer = arena.allocate(Stat.LAYOUT);
      call(arena, state -> (int) Fstat.HANDLE.invokeExact(state, fd.number(), buffer), "fstat", fd);
      return Stat.read(buffer);
    }
  }

  public static void fsync(Fd fd) {
    try (Arena arena = Arena.ofConfined()) {
      call(arena, state -> (int) Fsync.HANDLE.invokeExact(state, fd.number()), "fsync", fd);
    }
  }

  public static void ftruncate(Fd fd, long length) {
    try (Arena arena = Arena.ofConfined()) {
      call(
          arena,
          state -> (int) Ftruncate.HANDLE.invokeExact(state, fd.number(), length),
          "ftruncate",
          fd,
          length);
    }
  }

  public static long lseek(Fd fd, long offset, int whence) {
    try (Arena arena = Arena.ofConfined()) {
      return call(
          arena,
          state -> (long) Lseek.HANDLE.invokeExact(state, fd.number(), offset, whence),
          "lseek",
          fd,
          offset,
          whence);
    }
  }

  /** Copies up to {@code length} bytes at the same offset in both files; returns bytes copied. */
  public static long copyFileRange(Fd in, Fd out, long offset, long length) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment inOffset = arena.allocateFrom(JAVA_LONG, offset);
      MemorySegment outOffset = arena.allocateFrom(JAVA_LONG, offset);
      return call(
          arena,
          state ->
              (long)
                  CopyFileRange.HANDLE.invokeExact(
                      state, in.number(), inOffset, out.number(), outOffset, length, 0),
          "copy_file_range",
          in,
          out,
          offset,
          length);
    }
  }

  /** Reads into {@code buffer} (up to its size) from {@code offset}; returns bytes read. */
  public static long pread(Fd fd, MemorySegment buffer, long offset) {
    try (Arena arena = Arena.ofConfined()) {
      return call(
          arena,
          state -> (long) Pread.HANDLE.invokeExact(state, fd.number(), buffer, buffer.byteSize(), offset),
          "pread",
          fd,
          buffer.byteSize(),
          offset);
    }
  }

  /**
   * Reads {@code length} bytes at {@code offset} into a buffer of its own and drops them: whether a
   * span can be read, asked of the device itself. Returns bytes read (0 at the end, short when the
   * device ends sooner).
   */
  public static long preadAndDrop(Fd fd, int length, long offset) {
    try (Arena arena = Arena.ofConfined()) {
      return pread(fd, arena.allocate(length), offset);
    }
  }

  /** Writes all of {@code buffer} at {@code offset}, looping over short writes. */
  public static void pwriteFully(Fd fd, MemorySegment buffer, long offset) {
    try (Arena arena = Arena.ofConfined()) {
      for (long done = 0; done < buffer.byteSize(); ) {
        MemorySegment rest = buffer.asSlice(done);
        long at = offset + done;
        done +=
            call(
                arena,
                state -> (long) Pwrite.HANDLE.invokeExact(state, fd.number(), rest, rest.byteSize(), at),
                "pwrite",
                fd,
                rest.byteSize(),
                at);
      }
    }
  }

  /** Writes all of {@code content} at {@code offset}. */
  public static void pwriteFully(Fd fd, byte[] content, long offset) {
    try (Arena arena = Arena.ofConfined()) {
      pwriteFully(fd, arena.allocateFrom(JAVA_BYTE, content), offset);
    }
  }

  public static void rename(Path from, Path to) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment cFrom = arena.allocateFrom(from.toString());
      MemorySegment cTo = arena.allocateFrom(to.toString());
      call(arena, state -> (int) Rename.HANDLE.invokeExact(state, cFrom, cTo), "rename", from, to);
    }
  }

  /** A pipe, both ends {@code O_CLOEXEC}: element 0 is the read end, element 1 the write end. */
  public static Fd[] pipe() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment fds = arena.allocate(JAVA_INT, 2);
      int flags = LinuxUapi.O_CLOEXEC();
      call(arena, state -> (int) Pipe2.HANDLE.invokeExact(state, fds, flags), "pipe2", "O_CLOEXEC");
      return new Fd[] {
        new Fd(fds.getAtIndex(JAVA_INT, 0), "pipe (read end)"),
        new Fd(fds.getAtIndex(JAVA_INT, 1), "pipe (write end)")
      };
    }
  }

  // read and write, for descriptors without a file position (a pseudo-terminal's master end, a
  // pipe).

  /** Reads into {@code buffer} (up to its size); returns bytes read, 0 at end of file. */
  public static long read(Fd fd, MemorySegment buffer) {
    try (Arena arena = Arena.ofConfined()) {
      return call(
          arena,
          state -> (long) Read.HANDLE.invokeExact(state, fd.number(), buffer, buffer.byteSize()),
          "read",
          fd,
          buffer.byteSize());
    }
  }

  /** Writes from {@code buffer} (up to its size); returns the bytes written, perhaps fewer. */
  public static long write(Fd fd, MemorySegment buffer) {
    try (Arena arena = Arena.ofConfined()) {
      return call(
          arena,
          state -> (long) Write.HANDLE.invokeExact(state, fd.number(), buffer, buffer.byteSize()),
          "write",
          fd,
          buffer.byteSize());
    }
  }

  /** Writes all of {@code content}, looping over short writes. */
  public static void writeFully(Fd fd, byte[] content) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment buffer = arena.allocateFrom(JAVA_BYTE, content);
      for (long done = 0; done < buffer.byteSize(); ) {
        MemorySegment rest = buffer.asSlice(done);
        done +=
            call(
                arena,
                state -> (long) Write.HANDLE.invokeExact(state, fd.number(), rest, rest.byteSize()),
                "write",
                fd,
                rest.byteSize());
      }
    }
  }

  @FunctionalInterface
  interface Downcall {
    long invoke(MemorySegment callState) throws Throwable;
  }

  /** Runs one downcall; -1 means failure, with the errno the call left in {@code callState}. */
  static long call(Arena arena, Downcall downcall, String operation, Object... arguments) {
    MemorySegment callState = arena.allocate(CALL_STATE);
    long result;
    try {
      result = downcall.invoke(callState);
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new AssertionError("a downcall threw a checked exception", t);
    }
    if (result == -1) {
      throw failure((int) ERRNO.get(callState, 0L), operation, arguments);
    }
    return result;
  }

  /** The exception for a call that failed with {@code errno}, however the call reported it. */
  static SyscallException failure(int errno, String operation, Object... arguments) {
    return new SyscallException(
        errno,
        Errno.name(errno),
        strerror(errno),
        operation,
        Arrays.stream(arguments).map(String::valueOf).toList());
  }

  private static String strerror(int errno) {
    try {
      // glibc returns static text for known errnos; 256 bytes is far more than the longest.
      return ((MemorySegment) Strerror.HANDLE.invokeExact(errno)).reinterpret(256).getString(0);
    } catch (Throwable t) {
      return "errno " + errno;
    }
  }

  private static MemorySegment cString(Arena arena, String value) {
    return value == null ? MemorySegment.NULL : arena.allocateFrom(value);
  }

  private static String hex(long value) {
    return "0x" + Long.toHexString(value);
  }

  static MethodHandle syscall(String name, ValueLayout result, MemoryLayout... arguments) {
    return LINKER.downcallHandle(
        LINKER.defaultLookup().findOrThrow(name),
        FunctionDescriptor.of(result, arguments),
        Linker.Option.captureCallState("errno"));
  }
}
