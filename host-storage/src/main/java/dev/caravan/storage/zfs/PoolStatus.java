package dev.caravan.storage.zfs;

import java.util.Objects;

/**
 * An imported pool: its health and its raw space, as {@code zpool list} reports SIZE, ALLOC and
 * FREE (from the root vdev's statistics). For the space a new volume can use, ask the pool's root
 * dataset instead: {@code zfs.properties(pool).get("available")}, which accounts for reservations
 * and the pool's slop space.
 *
 * @param name the pool
 * @param health ONLINE, DEGRADED, ...
 * @param size total capacity in bytes
 * @param allocated bytes allocated
 * @param free {@code size - allocated}
 */
public record PoolStatus(String name, PoolHealth health, long size, long allocated, long free) {
  public PoolStatus {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(health, "health");
  }

  /** Whether new data can be written: the pool is ONLINE or DEGRADED. */
  public boolean isUsable() {
    return health.isUsable();
  }
}
