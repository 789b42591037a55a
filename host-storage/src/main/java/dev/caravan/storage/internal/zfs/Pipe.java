package dev.caravan.storage.internal.zfs;

import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Libc;

/**
 * A kernel pipe, for streaming {@code lzc_send} into {@code lzc_receive} inside this process. Both
 * ends are {@code O_CLOEXEC}. Closing is idempotent per end, so the sender can close its end to
 * signal end-of-stream while the owner still closes everything in a finally block.
 */
public final class Pipe implements AutoCloseable {
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
