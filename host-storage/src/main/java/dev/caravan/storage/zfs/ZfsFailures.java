package dev.caravan.storage.zfs;

import dev.caravan.storage.internal.zfs.Lzc;
import dev.caravan.storage.internal.zfs.ZfsIoctls;
import java.util.List;

/**
 * Raises {@link ZfsException} from what the libzfs_core and /dev/zfs wrappers return. Those report
 * error numbers; this package decides which are failures, so every arrow between the two points
 * down (docs/layers.md).
 */
final class ZfsFailures {
  private ZfsFailures() {}

  static void orThrow(Lzc.Result result, String operation, String dataset) {
    orThrow(result, operation, dataset, null);
  }

  /** @param hint appended to the message when not null */
  static void orThrow(Lzc.Result result, String operation, String dataset, String hint) {
    if (!result.ok()) {
      throw new ZfsException(operation, dataset, result.errno(), result.itemErrors(), hint);
    }
  }

  static ZfsIoctls.Reply orThrow(ZfsIoctls.Reply reply, String operation, String dataset) {
    if (!reply.ok()) {
      throw new ZfsException(
          operation, dataset, reply.errno(), ZfsException.itemErrors(reply.reply()), null);
    }
    return reply;
  }

  /** The entries of a walk that reached its end; throws for one a failed reply ended early. */
  static List<ZfsIoctls.Reply> entries(ZfsIoctls.Listing listing, String operation, String dataset) {
    listing.failure().ifPresent(failed -> orThrow(failed, operation, dataset));
    return listing.entries();
  }
}
