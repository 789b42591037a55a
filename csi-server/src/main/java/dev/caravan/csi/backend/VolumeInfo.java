package dev.caravan.csi.backend;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A provisioned volume as a backend reports it.
 *
 * @param context immutable facts NodeStage needs later (handed back by the CO)
 * @param topology where the volume can be used from
 */
public record VolumeInfo(
    String id,
    String name,
    long capacityBytes,
    Map<String, String> context,
    Optional<ContentSource> source,
    List<Topology> topology) {
  public VolumeInfo {
    context = Map.copyOf(context);
    topology = List.copyOf(topology);
  }
}
