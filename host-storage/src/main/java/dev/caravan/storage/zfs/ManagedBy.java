package dev.caravan.storage.zfs;

import java.util.Objects;

/**
 * The ownership marker: a ZFS user property that the facade writes on every volume and snapshot it
 * creates, and requires before it modifies or destroys anything. A dataset Caravan did not create
 * is therefore never changed by it, whatever a caller asks.
 *
 * <p>The marker counts only when it is set locally on the dataset itself, never when it is
 * inherited from a parent: a volume someone creates by hand under a Caravan parent stays foreign.
 * Nor when it is only a received property: that is how {@link Zfs#receiveCopy} leaves a copy until
 * {@link Zfs#finishCopy} sets it locally as its last step (or how {@code zfs receive} leaves a
 * replica of a Caravan volume made elsewhere, which is not this manager's either). Parent
 * filesystems the facade creates on the way are not marked (they are shared containers, and the
 * facade never destroys filesystems).
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

  /** Whether {@code dataset} carries this marker, set locally on itself. */
  public boolean marks(DatasetProperties dataset) {
    return carries(dataset, PropertySource.LOCAL);
  }

  /** Whether {@code dataset} carries this marker only as a received property (see above). */
  public boolean marksReceived(DatasetProperties dataset) {
    return carries(dataset, PropertySource.RECEIVED);
  }

  private boolean carries(DatasetProperties dataset, PropertySource source) {
    return dataset
        .get(property)
        .filter(p -> p.value().equals(value) && p.source() == source)
        .isPresent();
  }

  @Override
  public String toString() {
    return property + "=" + value;
  }
}
