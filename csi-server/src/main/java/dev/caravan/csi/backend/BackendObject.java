package dev.caravan.csi.backend;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * What a backend can show about one volume's backing object, for the claim-chain inspector: read
 * only, gathered without changing anything.
 *
 * @param kind what the object is: "file", "zvol", "lun"
 * @param location where it lives (image path, dataset name), if it has one
 * @param exists whether the backing object is there
 * @param properties what the backend records about it (size, state, fs type, source...), never secrets
 * @param snapshots ids of snapshots taken from it
 * @param attachedDevice the device through which it is attached on this node, if any
 */
public record BackendObject(
    String kind,
    Optional<String> location,
    boolean exists,
    Map<String, String> properties,
    List<String> snapshots,
    Optional<Path> attachedDevice) {
  /**
   * The property a backend whose access control fences a volume sets when that control does not
   * hold for this volume (its value says why and what to change): the inspector reports it.
   */
  public static final String FENCE_OPEN = "fenceOpen";

  public BackendObject {
    properties = Map.copyOf(properties);
    snapshots = List.copyOf(snapshots);
  }
}
