package dev.caravan.storage.zfs;

import dev.caravan.storage.StorageException;
import java.util.Objects;

/**
 * The facade refused an operation because it would break one of its safety rules; ZFS was not
 * asked. {@link #reason()} says which rule, so a caller can map it (a CSI driver: {@code
 * FAILED_PRECONDITION} for most, {@code OUT_OF_RANGE} for {@link Reason#SHRINK}).
 */
public final class ZfsRefusedException extends StorageException {
  private static final long serialVersionUID = 1L;

  /** Which safety rule the operation would have broken. */
  public enum Reason {
    /** The dataset lacks the facade's ownership marker (see {@link ManagedBy}). */
    NOT_MANAGED,
    /** Destroy asked for a dataset that still has snapshots. */
    HAS_SNAPSHOTS,
    /** Destroy asked for a dataset that has child datasets: only leaves are destroyed. */
    HAS_CHILDREN,
    /** Destroy asked for a snapshot that clones depend on. */
    HAS_CLONES,
    /** A volume would get smaller. */
    SHRINK,
    /** The operation needs a volume (zvol) and the dataset is something else. */
    NOT_A_VOLUME,
    /** Destroy asked for a volume whose device is in use ({@link dev.caravan.storage.block.DeviceUse}). */
    IN_USE,
    /** The pool is not imported, or its health does not allow new data (FAULTED, SUSPENDED...). */
    POOL_UNAVAILABLE,
    /** A key operation asked for a dataset that is not encrypted with a passphrase. */
    NOT_ENCRYPTED,
  }

  private final Reason reason;
  private final String dataset;

  public ZfsRefusedException(Reason reason, String dataset, String message) {
    super(message);
    this.reason = Objects.requireNonNull(reason, "reason");
    this.dataset = Objects.requireNonNull(dataset, "dataset");
  }

  public Reason reason() {
    return reason;
  }

  /** The dataset, snapshot or pool concerned. */
  public String dataset() {
    return dataset;
  }
}
