package dev.caravan.storage.crypt;

import java.time.Duration;
import java.util.Objects;

/**
 * What a new LUKS2 key slot's argon2id costs, in cryptsetup's terms: libcryptsetup benchmarks this
 * host and picks the work that takes {@code iterTime} to open the slot ({@code --iter-time}), using
 * at most {@code memoryKiB} of memory ({@code --pbkdf-memory}) and {@code parallelThreads} threads
 * ({@code --pbkdf-parallel}). More time makes each guess of a brute-force attack cost more, and
 * every opening of the volume (each stage) wait that long. The header records the work chosen:
 * opening a slot uses what it records, never this.
 *
 * @param iterTime whole milliseconds, {@value #MIN_ITER_TIME_MS} to {@value #MAX_ITER_TIME_MS}
 * @param memoryKiB {@value #MIN_MEMORY_KIB} to {@value #MAX_MEMORY_KIB}, libcryptsetup's limits
 * @param parallelThreads 1 to {@value #MAX_PARALLEL_THREADS}, libcryptsetup's limits
 */
public record KeySlotCost(Duration iterTime, int memoryKiB, int parallelThreads) {
  /** The least time libcryptsetup accepts: a benchmark target of zero is refused. */
  public static final long MIN_ITER_TIME_MS = 1;

  /**
   * A minute: far beyond any sensible setting (cryptsetup's own default is two seconds), so that a
   * slip of extra zeros is refused instead of making every stage of the volume take hours.
   */
  public static final long MAX_ITER_TIME_MS = 60_000;

  /** libcryptsetup's least argon2id memory: 32 KiB. */
  public static final int MIN_MEMORY_KIB = 32;

  /** libcryptsetup's most argon2id memory: 4 GiB. */
  public static final int MAX_MEMORY_KIB = 4 * 1024 * 1024;

  static final int MAX_PARALLEL_THREADS = 4;

  /**
   * One second within 256 MiB and 4 threads: a node that stages many volumes at once needs that
   * much memory for each one being opened.
   */
  public static final KeySlotCost DEFAULT = new KeySlotCost(Duration.ofSeconds(1), 256 * 1024, 4);

  public KeySlotCost {
    Objects.requireNonNull(iterTime, "iterTime");
    long ms = iterTime.toMillis();
    if (!iterTime.equals(Duration.ofMillis(ms)) || ms < MIN_ITER_TIME_MS || ms > MAX_ITER_TIME_MS) {
      throw new IllegalArgumentException(
          "the LUKS2 iteration time must be a whole number of milliseconds from "
              + MIN_ITER_TIME_MS + " to " + MAX_ITER_TIME_MS + ", not " + iterTime);
    }
    if (memoryKiB < MIN_MEMORY_KIB || memoryKiB > MAX_MEMORY_KIB) {
      throw new IllegalArgumentException(
          "the argon2id memory must be from " + MIN_MEMORY_KIB + " to " + MAX_MEMORY_KIB
              + " KiB, not " + memoryKiB);
    }
    if (parallelThreads < 1 || parallelThreads > MAX_PARALLEL_THREADS) {
      throw new IllegalArgumentException(
          "the argon2id threads must be from 1 to " + MAX_PARALLEL_THREADS + ", not " + parallelThreads);
    }
  }

  /** The default memory ceiling and threads, and {@code iterTime} ({@code cryptsetup --iter-time}). */
  public static KeySlotCost iterTime(Duration iterTime) {
    return DEFAULT.withIterTime(iterTime);
  }

  /** This cost with {@code iterTime} instead ({@code cryptsetup --iter-time}). */
  public KeySlotCost withIterTime(Duration iterTime) {
    return new KeySlotCost(iterTime, memoryKiB, parallelThreads);
  }

  /**
   * This cost with at most {@code memoryKiB} of memory instead ({@code cryptsetup --pbkdf-memory}).
   * Every opening of a slot needs the memory its header records, so a small node that opens volumes
   * side by side needs a lower ceiling; argon2id over less memory is cheaper to attack in parallel.
   */
  public KeySlotCost withMemoryKiB(int memoryKiB) {
    return new KeySlotCost(iterTime, memoryKiB, parallelThreads);
  }
}
