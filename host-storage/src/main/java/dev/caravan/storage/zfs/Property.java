package dev.caravan.storage.zfs;

import java.util.Objects;

/**
 * One property of a dataset as ZFS reports it.
 *
 * <p>Numeric properties carry their raw number in {@link #value()} (bytes for sizes, the kernel's
 * index for choice properties: {@code compression} is {@code 15} for lz4, see {@link
 * Compression#fromIndex(long)}); {@link #numeric()} tells which. Properties at their default that
 * were never set anywhere are mostly absent from what the kernel returns; the facade does not make
 * defaults up.
 *
 * @param name {@code "volsize"}, {@code "caravan:managed"}, ...
 * @param value the value as text; decimal for numeric properties
 * @param numeric whether the kernel holds the value as a number
 * @param source where the value comes from
 * @param setOn the dataset it is set on (this one for {@code LOCAL}, the ancestor for {@code
 *     INHERITED}); empty for defaults and statistics
 */
public record Property(
    String name, String value, boolean numeric, PropertySource source, String setOn) {
  public Property {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(value, "value");
    Objects.requireNonNull(source, "source");
    Objects.requireNonNull(setOn, "setOn");
  }

  /** The value as a number; throws for a text property. */
  public long asLong() {
    if (!numeric) {
      throw new IllegalStateException(name + " is not numeric: " + value);
    }
    return Long.parseUnsignedLong(value);
  }

  @Override
  public String toString() {
    return name + "=" + value + " (" + source.name().toLowerCase(java.util.Locale.ROOT)
        + (source == PropertySource.INHERITED ? " from " + setOn : "") + ")";
  }
}
