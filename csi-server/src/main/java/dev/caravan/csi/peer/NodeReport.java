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
   * @param parameters the CreateVolume parameters (those the backend knows size its capacity answer)
   */
  static PlacementReport of(ControllerBackend backend, String self, long reserveBytes, String name,
      Map<String, String> parameters) {
    Map<String, String> params = new HashMap<>(parameters);
    params.keySet().retainAll(backend.knownParameters());
    params.remove(Routing.HOST);
    long available = backend.capacity(params).availableBytes();
    long free = Math.max(0, available - backend.unallocatedPromiseBytes() - reserveBytes);
    List<VolumeInfo> volumes = backend.listVolumes();
    String existing = volumes.stream().filter(v -> v.name().equals(name)).map(VolumeInfo::id).findFirst().orElse("");
    return PlacementReport.newBuilder().setNode(self).setFreeBytes(free).setVolumes(volumes.size())
        .setExistingVolumeId(existing).build();
  }
}
