package dev.caravan.csi.backend;

import java.util.Optional;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * How one backend's ids read, by their syntax alone: whether an id is of its form and the lock key
 * it has ({@link ControllerBackend#volumeId}), the key of the object a name gets ({@link
 * ControllerBackend#volumeLockKey}), and the node an id names ({@link ControllerBackend#volumeOwner}).
 * A backend states its scheme once and {@link ControllerBackend} answers those questions from it, so
 * a wrapper around a backend passes the whole scheme on and cannot leave one question out.
 *
 * @param volumeShape whether an id is a volume id of this backend, and its lock key
 * @param snapshotShape as {@code volumeShape} for snapshot ids
 * @param volumeLockKey the lock key of the volume CreateVolume makes for a name
 * @param snapshotLockKey the lock key of the snapshot CreateSnapshot makes for a name
 * @param volumeOwner the node a volume id names, if it names one
 * @param snapshotOwner the node a snapshot id names, if it names one
 */
public record IdScheme(
    Function<String, IdShape> volumeShape,
    Function<String, IdShape> snapshotShape,
    UnaryOperator<String> volumeLockKey,
    UnaryOperator<String> snapshotLockKey,
    Function<String, Optional<String>> volumeOwner,
    Function<String, Optional<String>> snapshotOwner) {

  /** A scheme whose ids name no node: any node's plugin serves them. */
  public static IdScheme unowned(Function<String, IdShape> volumeShape, Function<String, IdShape> snapshotShape,
      UnaryOperator<String> volumeLockKey, UnaryOperator<String> snapshotLockKey) {
    return new IdScheme(volumeShape, snapshotShape, volumeLockKey, snapshotLockKey,
        id -> Optional.empty(), id -> Optional.empty());
  }
}
