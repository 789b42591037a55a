package dev.caravan.csi.observe.inspect;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * What this node knows of a volume's replicas, for the claim-chain inspector: as the volume's owner,
 * each replica node's newest copy and the last round to it, from the replication rounds this plugin ran
 * since it started; as a replica node, the copy it holds. The same for every backend that replicates.
 */
public interface Replicas {
  /**
   * One replica node, as the owner's rounds since {@link Owned#since} know it.
   *
   * @param newestCopy the name of the newest copy the node holds, as the last round that reached it
   *     learned it; empty when it holds none, or no round has reached it yet
   * @param lastRoundStarted when the last round to the node started; empty when none has ended yet
   * @param lastError why the last round failed, when it did
   * @param upToDateAt when the last round that brought the copy up to date started
   */
  record Copy(String node, Optional<String> newestCopy, Optional<Instant> lastRoundStarted,
      Optional<Instant> lastRoundEnded, Optional<String> lastError, Optional<Instant> upToDateAt) {}

  /**
   * A volume this node owns and replicates.
   *
   * @param since when this plugin's rounds began (it started): no round before is known here
   * @param rounds whether this plugin replicates at all (its peer channel is up)
   */
  record Owned(int replicas, Duration interval, Instant since, boolean rounds, List<Copy> copies) {}

  /**
   * A replica this node holds of another node's volume.
   *
   * @param location the dataset or directory that holds it
   * @param newestCopy the name of its newest complete copy, if any
   * @param partial whether an interrupted receive waits to be resumed
   */
  record Held(String location, Optional<String> newestCopy, boolean partial) {}

  /** What this node holds or sends of a volume. */
  record View(Optional<Owned> owned, Optional<Held> held) {}

  /** The volume's replicas as this node sees them; reads the storage (the inspector bounds the wait). */
  View of(String volumeId);
}
