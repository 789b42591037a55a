package dev.caravan.csi.backend;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The storage side of the Controller service: provisioning, snapshots, expansion and capacity, in
 * domain records (no protobuf). The services validate requests and serialize operations per volume
 * before calling in; implementations must be idempotent (the CO retries anything) and report
 * failures as {@link CsiException} with the kind the spec asks for.
 */
public interface ControllerBackend {
  /** The CreateVolume parameters this backend understands; anything else is rejected before a call. */
  Set<String> knownParameters();

  /** The CreateSnapshot parameters this backend understands. */
  default Set<String> knownSnapshotParameters() {
    return Set.of();
  }

  /**
   * Checks that {@code id} is a well-formed volume id for this backend (syntax only), throwing
   * INVALID_ARGUMENT naming {@code field} otherwise. Called before any lookup so that no malformed id
   * ever reaches a file path, dataset name or API call.
   */
  void checkVolumeId(String field, String id);

  /** As {@link #checkVolumeId} for snapshot ids. */
  void checkSnapshotId(String field, String id);

  /**
   * Creates a volume, or returns the existing one if a volume of that name exists and is compatible
   * with the request; ALREADY_EXISTS if it exists and is not. Must leave state that a retry can
   * finish if interrupted at any point.
   */
  VolumeInfo createVolume(VolumeRequest request);

  /** Deletes a volume; success if it does not exist. FAILED_PRECONDITION while in use or snapshotted. */
  void deleteVolume(String volumeId);

  Optional<VolumeInfo> findVolume(String volumeId);

  /** Volume plus health and attachment, or empty if unknown. */
  Optional<VolumeStatus> volumeStatus(String volumeId);

  /** Every volume, sorted by id (the services paginate over this order). */
  List<VolumeInfo> listVolumes();

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
}
