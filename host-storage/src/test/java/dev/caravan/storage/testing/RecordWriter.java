package dev.caravan.storage.testing;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;

/**
 * A writer that keeps writing while a test breaks things underneath it: a thread appends
 * fixed-size records to one file, each numbered, filled from its number and ending in a CRC32C of
 * the rest, and fsyncs after every record. {@link #completed()} counts the records whose fsync
 * returned: those, and only those, must read back intact ({@link #verify}), whatever happened to
 * the device while they were written.
 */
public final class RecordWriter implements AutoCloseable {
  public static final int RECORD_BYTES = 4096;
  private static final Duration STOP_WAIT = Duration.ofMinutes(2);

  private final Path file;
  private final AtomicLong completed = new AtomicLong();
  private final Thread thread;
  private volatile boolean stop;
  private volatile Throwable failure;

  private RecordWriter(Path file) {
    this.file = file;
    this.thread = Thread.ofPlatform().daemon().name("record-writer").unstarted(this::run);
  }

  /** Creates {@code file} (it must not exist) and starts writing records to it. */
  public static RecordWriter start(Path file) {
    RecordWriter writer = new RecordWriter(file);
    writer.thread.start();
    return writer;
  }

  public Path file() {
    return file;
  }

  /** How many records are written and fsynced. */
  public long completed() {
    return completed.get();
  }

  /**
   * Waits until at least {@code count} records are fsynced.
   *
   * @throws AssertionError when a write or fsync failed, or {@code within} passed first; the
   *     message says {@code what} was waited for and how far the writer got
   */
  public void awaitCompleted(long count, Duration within, String what) {
    long start = System.nanoTime();
    long deadline = start + within.toNanos();
    while (completed.get() < count) {
      throwIfFailed();
      if (System.nanoTime() > deadline) {
        throw new AssertionError("waited " + within + " for " + what + ": the writer has fsynced "
            + completed.get() + " records of the " + count + " asked for");
      }
      pause();
    }
    throwIfFailed();
  }

  private void run() {
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      for (long seq = 0; !stop; seq++) {
        ByteBuffer buffer = ByteBuffer.wrap(record(seq));
        long position = seq * RECORD_BYTES;
        while (buffer.hasRemaining()) {
          position += channel.write(buffer, position);
        }
        channel.force(true);
        completed.set(seq + 1);
      }
    } catch (Throwable e) {
      failure = e;
    }
  }

  /**
   * Stops after the record being written, and fails when the writer failed or cannot stop. Once
   * it returns, {@link #completed()} is final; calling it again only repeats the check.
   */
  @Override
  public void close() {
    stop = true;
    try {
      if (!thread.join(STOP_WAIT)) {
        throw new AssertionError("the writer is still blocked in a write or fsync " + STOP_WAIT
            + " after being told to stop (" + completed.get() + " records fsynced)");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
    throwIfFailed();
  }

  /**
   * Reads {@code file} back and checks it holds exactly {@code count} records, each with its own
   * number, its own content and a matching checksum.
   */
  public static void verify(Path file, long count) throws IOException {
    long size = Files.size(file);
    if (size != count * RECORD_BYTES) {
      throw new AssertionError(file + " has " + size + " bytes, not the " + count + " records of "
          + RECORD_BYTES + " bytes that were fsynced");
    }
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
      ByteBuffer buffer = ByteBuffer.allocate(RECORD_BYTES);
      for (long seq = 0; seq < count; seq++) {
        buffer.clear();
        long position = seq * RECORD_BYTES;
        while (buffer.hasRemaining()) {
          int n = channel.read(buffer, position + buffer.position());
          if (n < 0) {
            throw new AssertionError("record " + seq + " of " + file + " ends early");
          }
        }
        byte[] read = buffer.array();
        if (!Arrays.equals(read, record(seq))) {
          long number = ByteBuffer.wrap(read).getLong(0);
          throw new AssertionError("record " + seq + " of " + file + " is damaged: it says number " + number
              + (checksumMatches(read) ? ", its checksum matches" : ", its checksum does not match"));
        }
      }
    }
  }

  private static byte[] record(long seq) {
    byte[] bytes = new byte[RECORD_BYTES];
    ByteBuffer buffer = ByteBuffer.wrap(bytes);
    buffer.putLong(seq);
    SplittableRandom random = new SplittableRandom(seq);
    while (buffer.remaining() > Long.BYTES) {
      buffer.putLong(random.nextLong());
    }
    buffer.putLong(checksum(bytes));
    return bytes;
  }

  private static long checksum(byte[] record) {
    CRC32C crc = new CRC32C();
    crc.update(record, 0, RECORD_BYTES - Long.BYTES);
    return crc.getValue();
  }

  private static boolean checksumMatches(byte[] record) {
    return ByteBuffer.wrap(record).getLong(RECORD_BYTES - Long.BYTES) == checksum(record);
  }

  private void throwIfFailed() {
    Throwable e = failure;
    if (e != null) {
      throw new AssertionError("the writer failed after " + completed.get() + " fsynced records: " + e, e);
    }
  }

  private static void pause() {
    try {
      Thread.sleep(100);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}
