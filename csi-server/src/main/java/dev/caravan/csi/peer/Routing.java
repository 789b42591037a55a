package dev.caravan.csi.peer;

import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.IdShape;
import java.util.Optional;

/** Which node an id belongs to, as far as the id says. */
final class Routing {
  /** The CreateVolume parameter naming the node to create on: a node id or {@code auto}. */
  static final String HOST = "host";
  static final String AUTO = "auto";

  private Routing() {}

  /**
   * The node the id names, for an id of the backend's form that names one; empty for anything else
   * (the local service then answers it as it always does: invalid, absent, or its own).
   */
  static Optional<String> ownerIfOurs(ControllerBackend backend, String id, boolean volume) {
    try {
      IdRules.requireBounded("id", id);
    } catch (CsiException e) {
      return Optional.empty();
    }
    IdShape shape = volume ? backend.volumeId(id) : backend.snapshotId(id);
    if (!(shape instanceof IdShape.Ours)) {
      return Optional.empty();
    }
    return volume ? backend.volumeOwner(id) : backend.snapshotOwner(id);
  }
}
