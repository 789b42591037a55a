package dev.caravan.csi.node;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.VolumeRef;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The node journal's record of one volume on this node: how and where it is staged, its device, and
 * every publish target.
 *
 * @param fsType the filesystem for mount access; empty for block access
 * @param device the attached block device, once known
 * @param stagingPaths where the volume is staged (Nomad stages once per usage, so there can be more than one)
 */
public record StagedVolume(
    String volumeId,
    Map<String, String> context,
    AccessType accessType,
    String fsType,
    List<String> mountFlags,
    Optional<Path> device,
    List<Path> stagingPaths,
    List<Published> targets) {

  /** One publish target: where, bound from which staging path, read-only or not. */
  public record Published(Path target, Path stagingPath, boolean readOnly) {}

  public StagedVolume {
    context = Map.copyOf(context);
    mountFlags = List.copyOf(mountFlags);
    stagingPaths = List.copyOf(stagingPaths);
    targets = List.copyOf(targets);
  }

  public VolumeRef ref() {
    return new VolumeRef(volumeId, context);
  }

  public Optional<Published> target(Path target) {
    return targets.stream().filter(t -> t.target().equals(target)).findFirst();
  }

  public boolean knowsPath(Path path) {
    return stagingPaths.contains(path) || target(path).isPresent();
  }

  StagedVolume withStagingPath(Path staging) {
    if (stagingPaths.contains(staging)) {
      return this;
    }
    List<Path> paths = new ArrayList<>(stagingPaths);
    paths.add(staging);
    return new StagedVolume(volumeId, context, accessType, fsType, mountFlags, device, paths, targets);
  }

  StagedVolume withoutStagingPath(Path staging) {
    List<Path> paths = new ArrayList<>(stagingPaths);
    paths.remove(staging);
    return new StagedVolume(volumeId, context, accessType, fsType, mountFlags, device, paths, targets);
  }

  StagedVolume withDevice(Path dev) {
    return new StagedVolume(volumeId, context, accessType, fsType, mountFlags, Optional.of(dev), stagingPaths, targets);
  }

  StagedVolume withTarget(Published p) {
    List<Published> list = new ArrayList<>(targets);
    list.removeIf(t -> t.target().equals(p.target()));
    list.add(p);
    return new StagedVolume(volumeId, context, accessType, fsType, mountFlags, device, stagingPaths, list);
  }

  StagedVolume withoutTarget(Path target) {
    List<Published> list = new ArrayList<>(targets);
    list.removeIf(t -> t.target().equals(target));
    return new StagedVolume(volumeId, context, accessType, fsType, mountFlags, device, stagingPaths, list);
  }

  StagedVolume withTargets(List<Published> list) {
    return new StagedVolume(volumeId, context, accessType, fsType, mountFlags, device, stagingPaths, list);
  }
}
