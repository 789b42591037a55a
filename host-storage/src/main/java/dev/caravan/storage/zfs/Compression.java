package dev.caravan.storage.zfs;

/**
 * Compression algorithms a volume can be created with. The kernel takes choice properties as
 * numbers ({@code enum zio_compress} in OpenZFS); {@link #index()} is that number, each algorithm
 * at its default level.
 */
public enum Compression {
  ON(1),
  OFF(2),
  LZJB(3),
  /** gzip at its default level, 6. */
  GZIP(10),
  ZLE(14),
  LZ4(15),
  /** zstd at its default level, 3. */
  ZSTD(16);

  /** Low bits of the property value that hold the algorithm; higher bits hold a level. */
  private static final long ALGORITHM_MASK = 0x7f;

  private static final int GZIP_1 = 5;
  private static final int GZIP_9 = 13;

  private final int index;

  Compression(int index) {
    this.index = index;
  }

  /** The number the kernel stores for this algorithm. */
  public int index() {
    return index;
  }

  /**
   * The algorithm of a stored {@code compression} value; gzip at any level is {@link #GZIP}, zstd
   * at any level {@link #ZSTD}.
   *
   * @throws IllegalArgumentException for a value this enum does not know
   */
  public static Compression fromIndex(long value) {
    int algorithm = (int) (value & ALGORITHM_MASK);
    if (algorithm >= GZIP_1 && algorithm <= GZIP_9) {
      return GZIP;
    }
    for (Compression c : values()) {
      if (c.index == algorithm) {
        return c;
      }
    }
    throw new IllegalArgumentException("unknown compression value " + value);
  }

  /** The name {@code zfs get} prints, for the default level. */
  public String zfsName() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}
