package dev.caravan.csi.peer;

import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.VolumeInfo;
import dev.caravan.csi.peer.v1.PlacementReport;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** What this node tells placement about itself. */
final class NodeReport {
  private NodeReport() {}

  /**
   * @param name the CO's volume name: the report carries the id of this node's volume of that name
   *     (made or being made); empty for the capacity alone
   * @param parameters the CreateVolume parameters (those the backend knows size its capacity answer)
   * @param generation this node's view generation ({@link HomeAuthority})
   */
  static PlacementReport of(ControllerBackend backend, String self, long reserveBytes, String name,
      Map<String, String> parameters, long generation) {
    Map<String, String> params = new HashMap<>(parameters);
    params.keySet().retainAll(backend.knownParameters());
    params.remove(Routing.HOST);
    long available = backend.capacity(params).availableBytes();
    long free = Math.max(0, available - backend.unallocatedPromiseBytes() - reserveBytes);
    List<VolumeInfo> volumes = backend.listVolumes();
    String existing = name.isEmpty() ? "" : backend.volumeNames().getOrDefault(name, "");
    return PlacementReport.newBuilder().setNode(self).setFreeBytes(free).setVolumes(volumes.size())
        .setExistingVolumeId(existing).setGeneration(generation).build();
  }
}
