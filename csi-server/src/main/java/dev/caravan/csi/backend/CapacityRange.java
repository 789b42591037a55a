package dev.caravan.csi.backend;

/**
 * Requested size bounds in bytes; 0 means "not given" for either bound (as in CSI). Validated by the
 * services: never negative, and {@code limitBytes >= requiredBytes} when both are given.
 */
public record CapacityRange(long requiredBytes, long limitBytes) {
  public static final CapacityRange UNSPECIFIED = new CapacityRange(0, 0);

  public CapacityRange {
    if (requiredBytes < 0 || limitBytes < 0) {
      throw new IllegalArgumentException("capacity bounds must not be negative");
    }
  }

  public boolean hasRequired() {
    return requiredBytes > 0;
  }

  public boolean hasLimit() {
    return limitBytes > 0;
  }

  /**
   * The size a new volume aims for, before rounding: the required bytes; else, for a copy, the
   * source's size; else {@code defaultSize} (held under the limit). Never below {@code minimum}
   * (the smallest volume the backend can format) nor below the source, whose data must fit.
   */
  public long wanted(long defaultSize, long minimum, long sourceSize) {
    long wanted;
    if (hasRequired()) {
      wanted = requiredBytes;
    } else if (sourceSize > 0) {
      wanted = sourceSize;
    } else {
      wanted = hasLimit() ? Math.min(defaultSize, limitBytes) : defaultSize;
    }
    return Math.max(wanted, Math.max(minimum, sourceSize));
  }

  /** Whether a volume of {@code size} bytes satisfies this range. */
  public boolean admits(long size) {
    return (!hasRequired() || size >= requiredBytes) && (!hasLimit() || size <= limitBytes);
  }
}
