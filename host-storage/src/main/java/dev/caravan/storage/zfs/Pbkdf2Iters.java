package dev.caravan.storage.zfs;

/**
 * The {@code pbkdf2iters} of a new passphrase-encrypted dataset: how many PBKDF2-HMAC-SHA1 rounds
 * derive its wrapping key from the passphrase. More rounds make each guess of a brute-force attack
 * cost more, and every load of the key (each stage of the volume) take longer. The dataset records
 * the count: loading its key uses what it records, never this.
 *
 * @param count {@value #MINIMUM} to {@value #MAXIMUM}
 */
public record Pbkdf2Iters(long count) {
  /** OpenZFS's {@code MIN_PBKDF2_ITERATIONS}: {@code zfs create} refuses fewer. */
  public static final long MINIMUM = 100_000;

  /**
   * The most OpenZFS's tools can use: they hand the count to OpenSSL's {@code
   * PKCS5_PBKDF2_HMAC_SHA1} as an {@code int}, so {@code zfs load-key} could not open a dataset
   * made with more.
   */
  public static final long MAXIMUM = Integer.MAX_VALUE;

  /** OpenZFS's {@code DEFAULT_PBKDF2_ITERATIONS}, what {@code zfs create} uses without the option. */
  public static final Pbkdf2Iters DEFAULT = new Pbkdf2Iters(350_000);

  public Pbkdf2Iters {
    if (count < MINIMUM || count > MAXIMUM) {
      throw new IllegalArgumentException(
          "pbkdf2iters must be from " + MINIMUM + " (OpenZFS's minimum) to " + MAXIMUM + ", not "
              + count);
    }
  }
}
