package dev.caravan.storage.internal.zfs;

import dev.caravan.storage.SyscallException;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Libc;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;

/**
 * A kernel pipe, for streaming {@code lzc_send} and {@code lzc_receive} inside this process: into
 * each other, or between one of them and a Java channel ({@link #drainTo}, {@link #fillFrom}). Both
 * ends are {@code O_CLOEXEC}. Closing is idempotent per end, so the sender can close its end to
 * signal end-of-stream while the owner still closes everything in a finally block.
 */
public final class Pipe implements AutoCloseable {
  /** Bytes moved per system call at most; a pipe holds 64 KiB unless a reader enlarges it. */
  private static final int CHUNK = 1 << 20;

  private final Fd readEnd;
  private final Fd writeEnd;
  private boolean readClosed;
  private boolean writeClosed;

  private Pipe(Fd readEnd, Fd writeEnd) {
    this.readEnd = readEnd;
    this.writeEnd = writeEnd;
  }

  public static Pipe open() {
    Fd[] ends = Libc.pipe();
    return new Pipe(ends[0], ends[1]);
  }

  public int readFd() {
    return readEnd.number();
  }

  public int writeFd() {
    return writeEnd.number();
  }

  /**
   * Copies everything written into the pipe to {@code out}, until every write end is closed (end of
   * stream).
   *
   * @return the bytes copied
   * @throws IOException what {@code out} threw; the bytes read before it are lost
   */
  public long drainTo(WritableByteChannel out) throws IOException {
    ByteBuffer buffer = ByteBuffer.allocateDirect(CHUNK);
    MemorySegment memory = MemorySegment.ofBuffer(buffer);
    long total = 0;
    while (true) {
      long read = read(memory);
      if (read == 0) {
        return total;
      }
      buffer.clear().limit((int) read);
      while (buffer.hasRemaining()) {
        out.write(buffer);
      }
      total += read;
    }
  }

  /** What {@link #fillFrom} did. */
  public record Filled(long bytes, boolean readerGone) {}

  /**
   * Copies {@code in} into the pipe until {@code in} ends, or until the read end is closed (the
   * reader stopped: then {@link Filled#readerGone()}, and the rest of {@code in} stays unread).
   * Does not close the write end. {@code in} must block: a read of 0 bytes is read again.
   *
   * @throws IOException what {@code in} threw
   */
  public Filled fillFrom(ReadableByteChannel in) throws IOException {
    ByteBuffer buffer = ByteBuffer.allocateDirect(CHUNK);
    MemorySegment memory = MemorySegment.ofBuffer(buffer);
    long total = 0;
    while (true) {
      buffer.clear();
      int read = in.read(buffer);
      if (read < 0) {
        return new Filled(total, false);
      }
      for (long done = 0; done < read; ) {
        long written = write(memory.asSlice(done, read - done));
        if (written < 0) {
          return new Filled(total + done, true);
        }
        done += written;
      }
      total += read;
    }
  }

  /** read(2) from the read end, again when interrupted by a signal; 0 at end of stream. */
  private long read(MemorySegment into) {
    while (true) {
      try {
        return Libc.read(readEnd, into);
      } catch (SyscallException e) {
        if (e.errno() != ZfsErrors.EINTR) {
          throw e;
        }
      }
    }
  }

  /** write(2) to the write end, again when interrupted; -1 when the read end is closed (EPIPE). */
  private long write(MemorySegment from) {
    while (true) {
      try {
        return Libc.write(writeEnd, from);
      } catch (SyscallException e) {
        if (e.errno() == ZfsErrors.EPIPE) {
          return -1;
        }
        if (e.errno() != ZfsErrors.EINTR) {
          throw e;
        }
      }
    }
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
