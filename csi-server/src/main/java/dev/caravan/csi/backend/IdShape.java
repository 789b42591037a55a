package dev.caravan.csi.backend;

/**
 * What a backend reads in a well-bounded id before any lookup: whether it is one the backend could
 * have issued. The services answer an id of the second kind as a volume or snapshot that does not
 * exist (DeleteVolume and DeleteSnapshot: OK; the rest: NOT_FOUND) without calling the backend again,
 * so such an id never reaches a file path, dataset name or storage API.
 */
public sealed interface IdShape {
  /**
   * An id of this backend's form.
   *
   * @param lockKey serializes every operation on the object the id names; it is the key of the CO
   *     name the id derives from too ({@link ControllerBackend#volumeLockKey}), so a retried create
   *     and a delete of one object exclude each other
   */
  record Ours(String lockKey) implements IdShape {}

  /**
   * An id no object of this backend can have.
   *
   * @param rule the form this backend's ids have, for the caller's message
   */
  record NotOurs(String rule) implements IdShape {}
}
