package dev.caravan.storage.zfs;

import dev.caravan.storage.internal.zfs.ZfsIoctls;
import java.util.Map;

/** Reads a pool's health and space out of its config nvlist, the way {@code zpool list} does. */
final class Pools {
  // Indexes into vdev_stat_t, which the config carries as a uint64 array.
  private static final int VS_STATE = 1;
  private static final int VS_AUX = 2;
  private static final int VS_ALLOC = 3;
  private static final int VS_SPACE = 4;

  private Pools() {}

  /**
   * The status from a {@code ZFS_IOC_POOL_STATS} reply. A failed call on an existing pool, or a
   * non-zero {@code zc_cookie} (the pool's real error, returned alongside a config), means the pool
   * could not be opened: FAULTED, as libzfs reports it. A config with {@code suspended} means I/O
   * is suspended. Otherwise the root vdev's state decides.
   */
  static PoolStatus status(String pool, ZfsIoctls.Reply reply) {
    Map<String, Object> config = reply.reply();
    long[] stats =
        config.get("vdev_tree") instanceof Map<?, ?> tree
                && tree.get("vdev_stats") instanceof long[] values
            ? values
            : new long[0];
    long space = stats.length > VS_SPACE ? stats[VS_SPACE] : 0;
    long allocated = stats.length > VS_ALLOC ? stats[VS_ALLOC] : 0;
    PoolHealth health;
    if (!reply.ok() || reply.cookie() != 0) {
      health = PoolHealth.FAULTED;
    } else if (config.containsKey("suspended")) {
      health = PoolHealth.SUSPENDED;
    } else if (stats.length > VS_AUX) {
      health = PoolHealth.fromVdevState(stats[VS_STATE], stats[VS_AUX]);
    } else {
      health = PoolHealth.UNKNOWN;
    }
    return new PoolStatus(pool, health, space, allocated, Math.max(0, space - allocated));
  }
}
