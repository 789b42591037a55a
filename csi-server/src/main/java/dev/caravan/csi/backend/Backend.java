package dev.caravan.csi.backend;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One storage backend (file: sparse files on loop devices; local: ZFS zvols; qnap: iSCSI LUNs on a
 * QNAP appliance): a controller half, a node half and a readiness check. Chosen at start by
 * {@code caravan serve --driver=...}.
 */
public interface Backend extends AutoCloseable {
  /** Short driver name: "file", "local" or "qnap". */
  String driver();

  ControllerBackend controller();

  NodeBackend node();

  /** Probe's answer: whether the backend can serve calls right now. */
  Readiness readiness();

  /**
   * Whether {@link #readiness} and {@link NodeBackend#health(VolumeRef, Optional)} answer from memory
   * and local syscalls that never wait for a device's I/O, a network or another process. Then the
   * server runs Probe and NodeGetVolumeStats on its event loop, without a thread hand-off; a backend
   * that talks to an appliance, a pool or a SCSI device must say false (the default).
   */
  default boolean answersWithoutWaiting() {
    return false;
  }

  /**
   * Read-only evidence about one volume's backing object for the claim-chain inspector. The id is of
   * this backend's form ({@link ControllerBackend#volumeId}). The default asks the controller; backends override
   * it to show more (paths, properties, the attached device). When the storage cannot be read it throws
   * (UNAVAILABLE, naming what did not answer) rather than report the object absent. It may block as
   * long as the storage does; the inspector bounds the wait.
   */
  default BackendObject describe(String volumeId) {
    Optional<VolumeInfo> info = controller().findVolume(volumeId);
    return new BackendObject(driver(), Optional.empty(), info.isPresent(),
        info.map(i -> Map.of("capacityBytes", Long.toString(i.capacityBytes()), "name", i.name()))
            .orElse(Map.of()),
        controller().listSnapshots().stream()
            .filter(s -> s.sourceVolumeId().equals(volumeId)).map(SnapshotInfo::id).toList(),
        Optional.empty());
  }

  /**
   * The command that shows an operator the storage's own state, for when it does not answer the
   * inspector (the next step of that finding): the pools' status, the appliance's API.
   */
  default String storageCheck() {
    return "caravan doctor --driver " + driver();
  }

  /** The pools this backend allocates from, for the pool gauges; none by default. */
  default List<PoolReport> pools() {
    return List.of();
  }

  @Override
  default void close() {}
}
