package dev.caravan.csi.scenario;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.zip.CRC32C;

/**
 * The failover scenarios' workload: an application appending numbered, checksummed records to one
 * file on the volume and fsyncing each one, and the verifier that reads them back afterwards. What a
 * scenario promises is that every record the writer saw fsynced is there, intact and in order; a
 * record torn by a crash may follow them, nothing else.
 *
 * <p>A record is 64 bytes: its number, the writer's generation (a new one per task start), 36 bytes
 * of payload derived from both, and a CRC-32C over the rest.
 */
public final class RecordLog {
  public static final int RECORD = 64;

  private RecordLog() {}

  /** The contents of a record log: the intact records from the start, and whether anything else follows. */
  public record Contents(long records, long trailingBytes) {}

  /** Reads {@code file} from the start; stops at the first record that is short, mis-numbered or fails its checksum. */
  public static Contents read(Path file) throws IOException {
    return parse(Files.readAllBytes(file));
  }

  /**
   * Reads the first {@code maxBytes} of {@code file} with the same rules: a block device holds its log
   * at offset 0 and zeros or stale data after it.
   */
  public static Contents readPrefix(Path file, int maxBytes) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(maxBytes);
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      while (buf.hasRemaining() && ch.read(buf, buf.position()) > 0) {
        // read advances the buffer's position
      }
    }
    return parse(java.util.Arrays.copyOf(buf.array(), buf.position()));
  }

  /**
   * Appends {@code count} records numbered from {@code first} at their place in {@code file} (a file on
   * a mounted volume, created if absent, or a block device) and fsyncs them before returning.
   */
  public static void appendDurably(Path file, long first, int count, int generation) throws IOException {
    try (FileChannel ch = Files.isRegularFile(file) || !Files.exists(file)
        ? FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)
        : FileChannel.open(file, StandardOpenOption.WRITE)) {
      for (long n = first; n < first + count; n++) {
        ByteBuffer r = record(n, generation);
        long at = n * RECORD;
        while (r.hasRemaining()) {
          at += ch.write(r, at);
        }
      }
      ch.force(true);
    }
  }

  private static Contents parse(byte[] all) {
    ByteBuffer b = ByteBuffer.wrap(all);
    long n = 0;
    while (b.remaining() >= RECORD) {
      ByteBuffer r = b.slice(b.position(), RECORD);
      if (r.getLong(0) != n || !checksumHolds(r)) {
        break;
      }
      n++;
      b.position(b.position() + RECORD);
    }
    return new Contents(n, all.length - n * RECORD);
  }

  /** Starts a writer appending after the intact records already in {@code file} (a restarted task resumes). */
  static Writer start(Path file, int generation) throws IOException {
    long first = Files.exists(file) ? read(file).records() : 0;
    return new Writer(file, generation, first, true);
  }

  /**
   * Starts a writer that never fsyncs: its records sit in the page cache until the kernel writes them
   * back, or something (a freeze, a sync) flushes them. {@link Writer#written()} counts them.
   */
  static Writer startUnsynced(Path file, int generation) throws IOException {
    return new Writer(file, generation, 0, false);
  }

  private static boolean checksumHolds(ByteBuffer r) {
    CRC32C crc = new CRC32C();
    crc.update(r.slice(0, RECORD - 4));
    return (int) crc.getValue() == r.getInt(RECORD - 4);
  }

  private static ByteBuffer record(long n, int generation) {
    ByteBuffer r = ByteBuffer.allocate(RECORD);
    r.putLong(n).putInt(generation);
    for (int i = 0; i < RECORD - 16; i++) {
      r.put((byte) (n * 31 + 7L * generation + i));
    }
    CRC32C crc = new CRC32C();
    crc.update(r.array(), 0, RECORD - 4);
    r.putInt((int) crc.getValue());
    return r.flip();
  }

  /** One task's writer: a thread that appends (and fsyncs) records until it is stopped or a write fails. */
  static final class Writer implements AutoCloseable {
    /** Records written (and, for a syncing writer, fsynced). */
    private final AtomicLong durable;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final Thread thread;
    private volatile boolean stopping;

    private Writer(Path file, int generation, long first, boolean sync) throws IOException {
      durable = new AtomicLong(first);
      FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      // A torn record of an earlier task is overwritten: the log resumes after its last intact record.
      ch.truncate(first * RECORD);
      ch.position(first * RECORD);
      thread = Thread.ofPlatform().name("record-writer-" + generation).daemon().start(() -> {
        try (ch) {
          long n = first;
          while (!stopping) {
            ByteBuffer r = record(n, generation);
            while (r.hasRemaining()) {
              ch.write(r);
            }
            if (sync) {
              ch.force(false);
            }
            durable.set(++n);
            Thread.sleep(2); // an application's pace, not a benchmark's: leave the CPU to the plugin
          }
        } catch (IOException | InterruptedException | RuntimeException e) {
          failure.set(e);
        }
      });
    }

    /** Whether a write or fsync failed (the writer has stopped and closed the file). */
    boolean failed() {
      return failure.get() != null && !thread.isAlive();
    }

    /** How many records are in the file and fsynced, counting those before this writer started. */
    long durable() {
      return durable.get();
    }

    /** How many records the writer's write(2) calls have returned for, synced or not. */
    long written() {
      return durable.get();
    }

    /** Waits until at least {@code records} are durable (written, for an unsynced writer); fails if the writer failed or {@code timeout} passes. */
    void awaitDurable(long records, Duration timeout) throws InterruptedException, TimeoutException {
      long deadline = System.nanoTime() + timeout.toNanos();
      while (durable.get() < records) {
        if (failure.get() != null) {
          throw new IllegalStateException("the writer failed after " + durable.get() + " records", failure.get());
        }
        if (System.nanoTime() > deadline) {
          throw new TimeoutException("the writer made " + durable.get() + " of " + records + " records durable in "
              + timeout);
        }
        Thread.sleep(5);
      }
    }

    /** Stops the writer, as a task that exits; returns how many records are durable. */
    long stop() throws InterruptedException {
      stopping = true;
      thread.join(Duration.ofSeconds(30));
      if (failure.get() != null) {
        throw new IllegalStateException("the writer failed after " + durable.get() + " records", failure.get());
      }
      return durable.get();
    }

    @Override
    public void close() throws InterruptedException {
      stopping = true;
      thread.join(Duration.ofSeconds(30));
    }
  }
}
