package dev.caravan.storage.zfs;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * What a new volume should look like. Immutable; start with {@link #of(String, long)} and refine:
 *
 * <pre>{@code
 * ZvolSpec.of("tank/caravan/vol-1", 10L << 30)
 *     .blockSize(16 * 1024)
 *     .compression(Compression.LZ4)
 *     .userProperty("caravan:source", "snapshot tank/caravan/vol-0@s1")
 * }</pre>
 *
 * Volumes are thick unless {@link #sparse(boolean) sparse}: they reserve their full size plus
 * metadata ({@code refreservation}), so writing to them never fails for lack of pool space.
 *
 * @param name the dataset, {@code pool/path/name}; missing parents are created
 * @param size bytes; a multiple of the block size
 * @param blockSize {@code volblocksize}, fixed for the volume's life; empty: ZFS's default (16 KiB)
 *     for a new volume, the source's for a clone
 * @param sparse no reservation: space is taken only as blocks are written
 * @param compression empty: inherited from the parent
 * @param userProperties extra user properties ({@code module:name}), e.g. provenance
 */
public record ZvolSpec(
    String name,
    long size,
    OptionalLong blockSize,
    boolean sparse,
    Optional<Compression> compression,
    Map<String, String> userProperties) {

  /** ZFS's {@code volblocksize} when none is given (OpenZFS 2.2 and later). */
  public static final long DEFAULT_BLOCK_SIZE = 16 * 1024;

  private static final long MIN_BLOCK_SIZE = 512;
  private static final long MAX_BLOCK_SIZE = 16L * 1024 * 1024;

  public ZvolSpec {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(blockSize, "blockSize");
    Objects.requireNonNull(compression, "compression");
    DatasetNames.requireChild(name);
    if (size <= 0) {
      throw new IllegalArgumentException("volume size must be positive: " + size);
    }
    blockSize.ifPresent(
        b -> {
          if (b < MIN_BLOCK_SIZE || b > MAX_BLOCK_SIZE || Long.bitCount(b) != 1) {
            throw new IllegalArgumentException(
                "volblocksize must be a power of two from 512 bytes to 16 MiB: " + b);
          }
        });
    long block = blockSize.orElse(DEFAULT_BLOCK_SIZE);
    if (size % block != 0) {
      throw new IllegalArgumentException(
          "volume size " + size + " is not a multiple of the block size " + block);
    }
    userProperties = UserProperties.checked(userProperties, null);
  }

  /** A thick volume with ZFS's default block size, no compression choice, no user properties. */
  public static ZvolSpec of(String name, long size) {
    return new ZvolSpec(name, size, OptionalLong.empty(), false, Optional.empty(), Map.of());
  }

  public ZvolSpec size(long newSize) {
    return new ZvolSpec(name, newSize, blockSize, sparse, compression, userProperties);
  }

  public ZvolSpec blockSize(long bytes) {
    return new ZvolSpec(name, size, OptionalLong.of(bytes), sparse, compression, userProperties);
  }

  public ZvolSpec sparse(boolean noReservation) {
    return new ZvolSpec(name, size, blockSize, noReservation, compression, userProperties);
  }

  public ZvolSpec compression(Compression algorithm) {
    return new ZvolSpec(
        name, size, blockSize, sparse, Optional.of(algorithm), userProperties);
  }

  public ZvolSpec userProperty(String property, String value) {
    Map<String, String> more = new LinkedHashMap<>(userProperties);
    more.put(property, value);
    return new ZvolSpec(name, size, blockSize, sparse, compression, more);
  }

  /** The block size the volume will have when created new. */
  long effectiveBlockSize() {
    return blockSize.orElse(DEFAULT_BLOCK_SIZE);
  }
}
