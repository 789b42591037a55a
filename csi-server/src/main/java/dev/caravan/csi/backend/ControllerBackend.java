package dev.caravan.csi.backend;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * The storage side of the Controller service: provisioning, snapshots, expansion and capacity, in
 * domain records (no protobuf). The services validate requests, answer ids the backend could never
 * have issued ({@link IdShape.NotOurs}) themselves, and serialize operations per object on the
 * backend's lock keys before calling in, so every id a method receives is of the backend's form.
 * Implementations must be idempotent (the CO retries anything) and report failures as {@link
 * CsiException} with the kind the spec asks for, naming the field and the rule.
 */
public interface ControllerBackend {
  /** The CreateVolume parameters this backend understands; anything else is rejected before a call. */
  /** The backend's replication, when it replicates volumes to other nodes. */
  default Optional<Replication> replication() {
    return Optional.empty();
  }

  Set<String> knownParameters();

  /**
   * Why this backend cannot make encrypted volumes here ({@code encryption=on}, see {@link
   * Encryption}), or empty when it can; a backend that can lists {@link Encryption#PARAMETER} in
   * {@link #knownParameters()}.
   */
  default Optional<String> encryptionUnavailable() {
    return Optional.of("this backend does not encrypt volumes");
  }

  /** The CreateSnapshot parameters this backend understands. */
  default Set<String> knownSnapshotParameters() {
    return Set.of();
  }

  /** How this backend's ids read; the id questions below are answered from it. */
  IdScheme ids();

  /**
   * Whether {@code id} is a volume id this backend could have issued, by its syntax alone (no
   * storage is touched), and if so the key that serializes operations on that volume. Called with
   * ids that passed {@link IdRules#requireBounded}. Must agree with {@link #volumeLockKey}: the id of
   * the volume created for a name has that name's key.
   */
  default IdShape volumeId(String id) {
    return ids().volumeShape().apply(id);
  }

  /** As {@link #volumeId} for snapshot ids. */
  default IdShape snapshotId(String id) {
    return ids().snapshotShape().apply(id);
  }

  /**
   * The node whose storage holds the volume {@code id} names, when the id says so: ids of node-local
   * backends that plugins on other nodes forward calls for. Empty when the id names no node (any
   * node's plugin serves it, or it predates node-scoped ids). Called with ids of this backend's form.
   */
  default Optional<String> volumeOwner(String id) {
    return ids().volumeOwner().apply(id);
  }

  /** As {@link #volumeOwner} for snapshot ids. */
  default Optional<String> snapshotOwner(String id) {
    return ids().snapshotOwner().apply(id);
  }

  /**
   * Bytes promised to existing volumes that {@link CapacityReport#availableBytes()} does not count as
   * used yet (sparse images not written to); placement subtracts them. Zero where every volume's size
   * is reserved when it is made.
   */
  default long unallocatedPromiseBytes() {
    return 0;
  }

  /** The lock key of the volume CreateVolume makes for {@code name} (see {@link IdShape.Ours}). */
  default String volumeLockKey(String name) {
    return ids().volumeLockKey().apply(name);
  }

  /** The lock key of the snapshot CreateSnapshot makes for {@code name}. */
  default String snapshotLockKey(String name) {
    return ids().snapshotLockKey().apply(name);
  }

  /**
   * Creates a volume, or returns the existing one if a volume of that name exists and is compatible
   * with the request; ALREADY_EXISTS if it exists and is not. Must leave state that a retry can
   * finish if interrupted at any point.
   */
  default VolumeInfo createVolume(VolumeRequest request) {
    return provisionVolume(request).volume();
  }

  /**
   * As {@link #createVolume}, also saying whether this call made the volume or found it under the
   * name (a volume half-made by an earlier call and finished by this one counts as found).
   */
  Provisioned provisionVolume(VolumeRequest request);

  /**
   * Deletes a volume; success if it does not exist. FAILED_PRECONDITION, with the volume untouched,
   * while this node has it staged or published ({@link NodeUsage}) or while it has snapshots.
   */
  void deleteVolume(String volumeId);

  Optional<VolumeInfo> findVolume(String volumeId);

  /**
   * Volume plus health and the nodes where it is staged or published (from {@link NodeUsage}), or
   * empty if unknown.
   */
  Optional<VolumeStatus> volumeStatus(String volumeId);

  /** Every volume, sorted by id (the services paginate over this order). */
  List<VolumeInfo> listVolumes();

  /**
   * The name and id of every volume this node holds, the ones a create is still making included (a
   * create interrupted midway that a retry finishes here): what a plugin with peers reads to learn
   * which names exist where. The default is {@link #listVolumes}'s names, for backends that list a
   * volume from the moment it is recorded.
   */
  default Map<String, String> volumeNames() {
    Map<String, String> names = new TreeMap<>();
    listVolumes().forEach(v -> names.putIfAbsent(v.name(), v.id()));
    return names;
  }

  /** Creates (or returns, if the same name and source already exist) a snapshot of a volume. */
  SnapshotInfo createSnapshot(String sourceVolumeId, String name, Map<String, String> parameters);

  /** Deletes a snapshot; success if it does not exist. */
  void deleteSnapshot(String snapshotId);

  Optional<SnapshotInfo> findSnapshot(String snapshotId);

  /** Every snapshot, sorted by id. */
  List<SnapshotInfo> listSnapshots();

  /**
   * Grows a volume to at least {@code range.requiredBytes()}; never shrinks (a smaller request
   * succeeds with the current size). {@code accessType} is null when the CO did not say.
   */
  ExpandResult expandVolume(String volumeId, CapacityRange range, AccessType accessType);

  CapacityReport capacity(Map<String, String> parameters);

  /**
   * Whether this backend attaches volumes to nodes from the controller (ControllerPublish and
   * ControllerUnpublish, the PUBLISH_UNPUBLISH_VOLUME capability). False for backends whose node
   * service attaches the storage itself (file, local).
   */
  default boolean publishes() {
    return false;
  }

  /**
   * Makes the volume usable by {@code nodeId} and by no other node; returns the publish context.
   * Idempotent for the node that holds it; FAILED_PRECONDITION, naming the holder, while another
   * node holds it; NOT_FOUND for a volume or node that does not exist.
   *
   * @param secrets the request's secrets (never logged)
   */
  default Map<String, String> publishVolume(String volumeId, String nodeId, Map<String, String> secrets) {
    throw new CsiException(CsiException.Kind.UNIMPLEMENTED, "ControllerPublishVolume is not supported by this backend");
  }

  /** Withdraws the volume from {@code nodeId}, or from every node when empty; OK when it is not published there. */
  default void unpublishVolume(String volumeId, Optional<String> nodeId) {
    throw new CsiException(CsiException.Kind.UNIMPLEMENTED, "ControllerUnpublishVolume is not supported by this backend");
  }
}
