package dev.caravan.csi.service;

import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.IdShape;
import dev.caravan.csi.backend.VolumeLocks;
import java.util.Optional;
import java.util.function.Function;
import java.util.function.UnaryOperator;

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
    return ours(field, id, backend::volumeId, VolumeLocks::volume);
  }

  /** The volume's lock key; NOT_FOUND naming the field and the form of the backend's ids otherwise. */
  public static String existingVolume(ControllerBackend backend, String field, String id) {
    return existing(field, id, backend::volumeId, VolumeLocks::volume);
  }

  /** The snapshot's lock key; empty for an id the backend never issues. */
  public static Optional<String> snapshot(ControllerBackend backend, String field, String id) {
    return ours(field, id, backend::snapshotId, VolumeLocks::snapshot);
  }

  public static String existingSnapshot(ControllerBackend backend, String field, String id) {
    return existing(field, id, backend::snapshotId, VolumeLocks::snapshot);
  }

  /** {@code lock} of the id's key, as {@code shape} reads the id; empty for an id not of that form. */
  private static Optional<String> ours(String field, String id, Function<String, IdShape> shape,
      UnaryOperator<String> lock) {
    IdRules.requireBounded(field, id);
    return shape.apply(id) instanceof IdShape.Ours ours ? Optional.of(lock.apply(ours.lockKey())) : Optional.empty();
  }

  /** As {@link #ours}, NOT_FOUND for an id not of that form. */
  private static String existing(String field, String id, Function<String, IdShape> shape,
      UnaryOperator<String> lock) {
    IdRules.requireBounded(field, id);
    return switch (shape.apply(id)) {
      case IdShape.Ours ours -> lock.apply(ours.lockKey());
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
