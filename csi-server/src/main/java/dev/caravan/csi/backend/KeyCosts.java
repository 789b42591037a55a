package dev.caravan.csi.backend;

import dev.caravan.storage.crypt.KeySlotCost;
import dev.caravan.storage.zfs.Pbkdf2Iters;
import java.time.Duration;
import java.util.Objects;

/**
 * What deriving the key of a new encrypted volume costs, per mechanism: the LUKS2 key slot of a file
 * or qnap volume ({@code caravan serve --luks-iter-time} and {@code --luks-pbkdf-memory}) and the
 * {@code pbkdf2iters} of a local volume
 * ({@code --zfs-pbkdf2-iters}). Both trade the time each stage spends unlocking the volume against
 * what each guess of a brute-force attack on its passphrase costs. They apply to volumes made (local)
 * or formatted (file, at its first stage) afterwards: an existing volume keeps what its header or
 * dataset records.
 */
public record KeyCosts(KeySlotCost luks, Pbkdf2Iters zfs) {
  /** One second of argon2id within 256 MiB (half of cryptsetup's default), and OpenZFS's 350000 PBKDF2 rounds. */
  public static final KeyCosts DEFAULT = new KeyCosts(KeySlotCost.DEFAULT, Pbkdf2Iters.DEFAULT);

  public KeyCosts {
    Objects.requireNonNull(luks, "luks");
    Objects.requireNonNull(zfs, "zfs");
  }

  /**
   * These costs with the LUKS2 key slot taking {@code ms} of argon2id to open ({@code --luks-iter-time}).
   *
   * @throws IllegalArgumentException naming the flag and its range
   */
  public KeyCosts withLuksIterTime(long ms) {
    if (ms < KeySlotCost.MIN_ITER_TIME_MS || ms > KeySlotCost.MAX_ITER_TIME_MS) {
      throw new IllegalArgumentException("--luks-iter-time '" + ms + "' must be a whole number of milliseconds from "
          + KeySlotCost.MIN_ITER_TIME_MS + " to " + KeySlotCost.MAX_ITER_TIME_MS);
    }
    return withLuks(luks.withIterTime(Duration.ofMillis(ms)));
  }

  /**
   * These costs with the LUKS2 key slot's argon2id using at most {@code kib} KiB of memory
   * ({@code --luks-pbkdf-memory}).
   *
   * @throws IllegalArgumentException naming the flag and its range
   */
  public KeyCosts withLuksPbkdfMemory(long kib) {
    if (kib < KeySlotCost.MIN_MEMORY_KIB || kib > KeySlotCost.MAX_MEMORY_KIB) {
      throw new IllegalArgumentException("--luks-pbkdf-memory '" + kib + "' must be a number of KiB from "
          + KeySlotCost.MIN_MEMORY_KIB + " to " + KeySlotCost.MAX_MEMORY_KIB + " (libcryptsetup's limits)");
    }
    return withLuks(luks.withMemoryKiB((int) kib));
  }

  /**
   * The {@code pbkdf2iters} {@code --zfs-pbkdf2-iters} names.
   *
   * @throws IllegalArgumentException naming the flag and its range
   */
  public static Pbkdf2Iters zfsPbkdf2Iters(long n) {
    if (n < Pbkdf2Iters.MINIMUM || n > Pbkdf2Iters.MAXIMUM) {
      throw new IllegalArgumentException("--zfs-pbkdf2-iters '" + n + "' must be from " + Pbkdf2Iters.MINIMUM
          + " (OpenZFS's minimum) to " + Pbkdf2Iters.MAXIMUM);
    }
    return new Pbkdf2Iters(n);
  }

  /** This cost with {@code luks} for LUKS2 key slots. */
  public KeyCosts withLuks(KeySlotCost cost) {
    return new KeyCosts(cost, zfs);
  }

  /** This cost with {@code zfs} for ZFS wrapping keys. */
  public KeyCosts withZfs(Pbkdf2Iters cost) {
    return new KeyCosts(luks, cost);
  }
}
