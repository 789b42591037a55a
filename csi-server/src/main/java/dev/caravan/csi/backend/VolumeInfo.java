package dev.caravan.csi.backend;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A provisioned volume as a backend reports it.
 *
 * @param fsType the filesystem a mount of this volume uses, as CreateVolume recorded it (from the
 *     capability's fs_type or the fsType parameter; ext4 when neither said, also for volumes created
 *     for block access only, since any volume can later be staged for mount access)
 * @param context immutable facts NodeStage needs later (handed back by the CO), among them the
 *     access types the volume was created for ({@link AccessType#CONTEXT_KEY})
 * @param topology where the volume can be used from
 */
public record VolumeInfo(
    String id,
    String name,
    long capacityBytes,
    String fsType,
    Map<String, String> context,
    Optional<ContentSource> source,
    List<Topology> topology) {
  public VolumeInfo {
    context = Map.copyOf(context);
    topology = List.copyOf(topology);
  }

  /** The access types CreateVolume recorded; both for a volume made before they were recorded. */
  public Set<AccessType> accessTypes() {
    return AccessType.fromContextValue(context.get(AccessType.CONTEXT_KEY)).orElse(Set.of(AccessType.values()));
  }
}
