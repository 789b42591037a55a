package dev.caravan.csi.backend;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A backend's part in replication, in Java types: on a volume's owner, the replication snapshots it
 * takes and the streams it writes; on another node, the replica it receives them into. The peer layer
 * carries the streams between the two ({@code dev.caravan.csi.peer}); nothing here knows of peers.
 *
 * <p>A replica is not a volume: nothing lists it as one, mounts it or changes it but its receives. Its
 * owner's replication snapshots are named so that no CSI snapshot name can produce them, and are
 * never listed as the volume's snapshots.
 */
public interface Replication {
  /**
   * One of the owner's replication snapshots.
   *
   * @param name its short name (after the {@code @})
   * @param guid its ZFS GUID, the same on every copy of it
   */
  record Point(String name, long guid) {}

  /**
   * What a node holds of a volume's replica.
   *
   * @param exists whether the replica's dataset exists (complete or partial)
   * @param newest its newest complete snapshot, if any
   * @param resumeToken the token of an interrupted receive, if one waits
   */
  record ReplicaState(boolean exists, Optional<Point> newest, Optional<String> resumeToken) {}

  /** What a stream brings to a replica. */
  enum StreamKind {
    /** Everything up to a snapshot: the first copy, or one that only a partial receive began. */
    FULL,
    /** The changes from the replica's newest snapshot. */
    INCREMENTAL,
    /** The rest of an interrupted receive. */
    RESUME
  }

  /**
   * Called once the peer layer carries this node's streams: until then CreateVolume refuses
   * replicas, since nothing would send them.
   */
  void attach();

  // ---- the owner's side ----

  /** Every replicated volume on this node, by id, with its settings as recorded on it. */
  Map<String, ReplicationSettings> replicated();

  /** A volume's replication settings as recorded on it; empty when it is not here. */
  Optional<ReplicationSettings> settings(String volumeId);

  /** The volume's replication snapshots, oldest first. NOT_FOUND when the volume is not here. */
  List<Point> replicationSnapshots(String volumeId);

  /** Takes a new replication snapshot of the volume. */
  Point takeReplicationSnapshot(String volumeId);

  /**
   * Writes a stream of replication snapshot {@code to}, incremental from {@code from} when given.
   *
   * @return the bytes written
   */
  long send(String volumeId, Optional<String> from, String to, OutputStream out) throws IOException;

  /**
   * Writes the rest of the stream an interrupted receive stopped in.
   *
   * @return the bytes written
   * @throws CsiException FAILED_PRECONDITION when this side no longer has the stream's snapshots:
   *     the replica must be refreshed in full
   */
  long resume(String volumeId, String token, OutputStream out) throws IOException;

  /** The short name of the snapshot a resume token's stream brings. */
  String resumedSnapshot(String token);

  /**
   * Destroys the volume's replication snapshots whose GUID is not in {@code keep}, and of several with
   * one GUID all but the newest; never another snapshot.
   */
  void prune(String volumeId, Set<Long> keep);

  // ---- a replica's side ----

  /** What this node holds of the volume's replica. */
  ReplicaState replicaState(String volumeId);

  /**
   * Receives a stream into the volume's replica here; then destroys the replica's older replication
   * snapshots, keeping the newest. A FULL stream onto a complete copy refreshes it: the copy is never
   * destroyed before the new one is whole. A stream that breaks off (an IOException from {@code in})
   * leaves what {@link #afterABrokenStream()} says.
   */
  Point receive(String volumeId, String snapshot, StreamKind kind, InputStream in) throws IOException;

  /** What a receive that a broken stream cut short leaves here, in words for the log and the sender. */
  String afterABrokenStream();

  /**
   * Destroys the volume's replica here (its snapshots, a partial receive, then the dataset, one leaf
   * at a time).
   *
   * @return false when there was none
   */
  boolean deleteReplica(String volumeId);

  /** The volume ids this node holds replicas of. */
  Set<String> replicas();

  /**
   * Where this node keeps the volume's replica (a dataset, a directory), for the inspector; it need not
   * exist. Empty when the backend does not say.
   */
  default Optional<String> replicaLocation(String volumeId) {
    return Optional.empty();
  }

  /**
   * When a replication snapshot was taken, from its name: both backends name one {@code
   * repl-<milliseconds>}. Empty for a name that is not one.
   */
  static Optional<java.time.Instant> pointTime(String name) {
    if (!name.matches("repl-[0-9]{1,18}")) {
      return Optional.empty();
    }
    return Optional.of(java.time.Instant.ofEpochMilli(Long.parseLong(name.substring("repl-".length()))));
  }
}
