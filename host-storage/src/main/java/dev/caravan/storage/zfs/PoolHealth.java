package dev.caravan.storage.zfs;

/**
 * A pool's health as {@code zpool list} shows it in its HEALTH column, derived the same way: from
 * the root vdev's state and its reason, unless the pool is suspended or failed to open.
 */
public enum PoolHealth {
  ONLINE,
  DEGRADED,
  FAULTED,
  OFFLINE,
  UNAVAIL,
  REMOVED,
  /** I/O is suspended (failmode=wait or continue, or multihost protection). */
  SUSPENDED,
  /** Split off from another pool. */
  SPLIT,
  UNKNOWN;

  // vdev_state_t and vdev_aux_t values, from sys/fs/zfs.h
  private static final long STATE_CLOSED = 1;
  private static final long STATE_OFFLINE = 2;
  private static final long STATE_REMOVED = 3;
  private static final long STATE_CANT_OPEN = 4;
  private static final long STATE_FAULTED = 5;
  private static final long STATE_DEGRADED = 6;
  private static final long STATE_HEALTHY = 7;
  private static final long AUX_CORRUPT_DATA = 2;
  private static final long AUX_BAD_LOG = 13;
  private static final long AUX_SPLIT_POOL = 15;

  /** Health from a vdev's {@code vs_state} and {@code vs_aux}. */
  static PoolHealth fromVdevState(long state, long aux) {
    if (state == STATE_CLOSED || state == STATE_OFFLINE) {
      return OFFLINE;
    } else if (state == STATE_REMOVED) {
      return REMOVED;
    } else if (state == STATE_CANT_OPEN) {
      if (aux == AUX_CORRUPT_DATA || aux == AUX_BAD_LOG) {
        return FAULTED;
      }
      return aux == AUX_SPLIT_POOL ? SPLIT : UNAVAIL;
    } else if (state == STATE_FAULTED) {
      return FAULTED;
    } else if (state == STATE_DEGRADED) {
      return DEGRADED;
    } else if (state == STATE_HEALTHY) {
      return ONLINE;
    }
    return UNKNOWN;
  }

  /** Whether new data can be written: ONLINE or DEGRADED (still redundant enough to work). */
  public boolean isUsable() {
    return this == ONLINE || this == DEGRADED;
  }
}
