package dev.caravan.storage.zfs;

import java.util.Objects;

/**
 * The ownership marker: a ZFS user property that the facade writes on every volume and snapshot it
 * creates, and requires before it modifies or destroys anything. A dataset Caravan did not create
 * is therefore never changed by it, whatever a caller asks.
 *
 * <p>The marker counts only when it is set on the dataset itself (property source {@code local} or
 * {@code received}), never when it is inherited from a parent: a volume someone creates by hand
 * under a Caravan parent stays foreign. Parent filesystems the facade creates on the way are not
 * marked (they are shared containers, and the facade never destroys filesystems).
 *
 * <p>{@link #CARAVAN} is {@code caravan:managed=true}. Another agent embedding host-storage passes
 * its own marker to {@link Zfs#open(ManagedBy)}, so that the two never touch each other's volumes.
 *
 * @param property a user property name: lower case, containing a colon ({@code module:name})
 * @param value the value that means "ours"
 */
public record ManagedBy(String property, String value) {
  public static final ManagedBy CARAVAN = new ManagedBy("caravan:managed", "true");

  public ManagedBy {
    Objects.requireNonNull(property, "property");
    Objects.requireNonNull(value, "value");
    UserProperties.requireUserPropertyName(property);
    if (value.isEmpty()) {
      throw new IllegalArgumentException("the marker value must not be empty");
    }
  }

  /** Whether {@code dataset} carries this marker, set on itself rather than inherited. */
  public boolean marks(DatasetProperties dataset) {
    return dataset
        .get(property)
        .filter(p -> p.value().equals(value))
        .filter(
            p -> p.source() == PropertySource.LOCAL || p.source() == PropertySource.RECEIVED)
        .isPresent();
  }

  @Override
  public String toString() {
    return property + "=" + value;
  }
}
