package dev.caravan.csi.service;

import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.IdShape;
import dev.caravan.csi.backend.VolumeLocks;
import java.util.Optional;

/**
 * The ids of requests read with the backend's rules, for every service. Three answers: what no id can
 * be (empty, over 128 bytes, a NUL) is INVALID_ARGUMENT; an id of the backend's form yields the lock
 * key of the object it names, shared by the controller and the node so that any two calls about one
 * object exclude each other; any other id names nothing this plugin could have made, and the
 * callers answer as the spec does for an object that does not exist, without touching storage.
 */
public final class Ids {
  private Ids() {}

  /** The volume's lock key; empty for an id the backend never issues. */
  public static Optional<String> volume(ControllerBackend backend, String field, String id) {
    IdRules.requireBounded(field, id);
    return switch (backend.volumeId(id)) {
      case IdShape.Ours ours -> Optional.of(VolumeLocks.volume(ours.lockKey()));
      case IdShape.NotOurs _ -> Optional.empty();
    };
  }

  /** The volume's lock key; NOT_FOUND naming the field and the form of the backend's ids otherwise. */
  public static String existingVolume(ControllerBackend backend, String field, String id) {
    IdRules.requireBounded(field, id);
    return switch (backend.volumeId(id)) {
      case IdShape.Ours ours -> VolumeLocks.volume(ours.lockKey());
      case IdShape.NotOurs notOurs -> throw absent(field, id, notOurs);
    };
  }

  /** The snapshot's lock key; empty for an id the backend never issues. */
  public static Optional<String> snapshot(ControllerBackend backend, String field, String id) {
    IdRules.requireBounded(field, id);
    return switch (backend.snapshotId(id)) {
      case IdShape.Ours ours -> Optional.of(VolumeLocks.snapshot(ours.lockKey()));
      case IdShape.NotOurs _ -> Optional.empty();
    };
  }

  public static String existingSnapshot(ControllerBackend backend, String field, String id) {
    IdRules.requireBounded(field, id);
    return switch (backend.snapshotId(id)) {
      case IdShape.Ours ours -> VolumeLocks.snapshot(ours.lockKey());
      case IdShape.NotOurs notOurs -> throw absent(field, id, notOurs);
    };
  }

  /** The lock key of the volume CreateVolume makes for {@code name}: the key of its id too. */
  public static String volumeNamed(ControllerBackend backend, String name) {
    return VolumeLocks.volume(backend.volumeLockKey(name));
  }

  public static String snapshotNamed(ControllerBackend backend, String name) {
    return VolumeLocks.snapshot(backend.snapshotLockKey(name));
  }

  private static CsiException absent(String field, String id, IdShape.NotOurs notOurs) {
    return CsiException.notFound(
        field + " '" + IdRules.printable(id) + "' does not exist: no object of this plugin has such an id ("
            + notOurs.rule() + ")");
  }
}
