package dev.caravan.storage.internal.zfs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.caravan.storage.SyscallException;
import dev.caravan.storage.internal.sys.Errno;
import dev.caravan.storage.internal.sys.Fd;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.List;

/**
 * A kernel pipe, for streaming {@code lzc_send} into {@code lzc_receive} inside this process. Both
 * ends are {@code O_CLOEXEC}. Closing is idempotent per end, so the sender can close its end to
 * signal end-of-stream while the owner still closes everything in a finally block.
 */
public final class Pipe implements AutoCloseable {
  private static final Linker LINKER = Linker.nativeLinker();
  private static final StructLayout CALL_STATE = Linker.Option.captureStateLayout();
  private static final VarHandle ERRNO =
      CALL_STATE.varHandle(MemoryLayout.PathElement.groupElement("errno"));
  private static final MethodHandle PIPE2 =
      LINKER.downcallHandle(
          LINKER.defaultLookup().findOrThrow("pipe2"),
          FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT),
          Linker.Option.captureCallState("errno"));
  private static final int O_CLOEXEC = 0x80000; // 02000000, asm-generic/fcntl.h

  private final Fd readEnd;
  private final Fd writeEnd;
  private boolean readClosed;
  private boolean writeClosed;

  private Pipe(Fd readEnd, Fd writeEnd) {
    this.readEnd = readEnd;
    this.writeEnd = writeEnd;
  }

  public static Pipe open() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment fds = arena.allocate(JAVA_INT, 2);
      MemorySegment state = arena.allocate(CALL_STATE);
      int result;
      try {
        result = (int) PIPE2.invokeExact(state, fds, O_CLOEXEC);
      } catch (RuntimeException | Error e) {
        throw e;
      } catch (Throwable t) {
        throw new AssertionError("a downcall threw a checked exception", t);
      }
      if (result == -1) {
        int errno = (int) ERRNO.get(state, 0L);
        throw new SyscallException(
            errno, Errno.name(errno), ZfsErrors.describe(errno), "pipe2", List.of("O_CLOEXEC"));
      }
      return new Pipe(
          new Fd(fds.getAtIndex(JAVA_INT, 0), "pipe (read end)"),
          new Fd(fds.getAtIndex(JAVA_INT, 1), "pipe (write end)"));
    }
  }

  public int readFd() {
    return readEnd.number();
  }

  public int writeFd() {
    return writeEnd.number();
  }

  /** Closes the read end: a writer still writing then fails with EPIPE instead of blocking. */
  public synchronized void closeReadEnd() {
    if (!readClosed) {
      readClosed = true;
      readEnd.close();
    }
  }

  /** Closes the write end: the reader then sees end-of-stream. */
  public synchronized void closeWriteEnd() {
    if (!writeClosed) {
      writeClosed = true;
      writeEnd.close();
    }
  }

  @Override
  public void close() {
    try {
      closeWriteEnd();
    } finally {
      closeReadEnd();
    }
  }
}
