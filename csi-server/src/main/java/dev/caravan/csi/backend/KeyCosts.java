package dev.caravan.csi.backend;

import dev.caravan.storage.crypt.KeySlotCost;
import dev.caravan.storage.zfs.Pbkdf2Iters;
import java.util.Objects;

/**
 * What deriving the key of a new encrypted volume costs, per mechanism: the LUKS2 key slot of a file
 * volume ({@code caravan serve --luks-iter-time}) and the {@code pbkdf2iters} of a local volume
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
}
