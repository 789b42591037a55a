package dev.caravan.csi.node;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.VolumeRef;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Predicate;

/**
 * The node journal's record of one volume on this node: how and where it is staged, its device, and
 * every publish target. Paths are as {@link AllowedRoots#canonical} makes them (parents resolved), so
 * they compare equal to what the mount table shows.
 *
 * @param fsType the filesystem for mount access; empty for block access
 * @param device the attached block device, once a stage has completed
 * @param stagings where the volume is staged (Nomad stages once per usage, so there can be more than one)
 * @param mountIds the mount id (as statx and mountinfo show it) of the mount made at a staging path
 *     or publish target, recorded right after mounting: an unmount there removes that mount only
 */
public record StagedVolume(
    String volumeId,
    Map<String, String> context,
    AccessType accessType,
    String fsType,
    Optional<Path> device,
    List<Staging> stagings,
    List<Published> targets,
    Map<Path, Integer> mountIds) {

  /**
   * One staging path and the capability it was staged with.
   *
   * @param mode the access mode; empty in records written before modes were kept
   * @param complete whether every step of NodeStageVolume finished there (attach, format, grow,
   *     mount); false while a stage is under way, and after one that failed or was cut short
   */
  public record Staging(Path path, Optional<AccessMode> mode, List<String> mountFlags, boolean complete) {
    public Staging {
      mountFlags = List.copyOf(mountFlags);
    }

    /** Same mode (when known) and the same mount flags, in any order. */
    public boolean sameCapability(AccessMode otherMode, List<String> otherFlags) {
      return mode.map(m -> m == otherMode).orElse(true) && Set.copyOf(mountFlags).equals(Set.copyOf(otherFlags));
    }

    Staging completed() {
      return new Staging(path, mode, mountFlags, true);
    }

    Staging incomplete() {
      return new Staging(path, mode, mountFlags, false);
    }
  }

  /**
   * One publish target: where, bound from which staging path, read-only or not, in which access mode
   * and with which mount flags.
   *
   * @param mode the access mode; empty in records written before modes were kept
   */
  public record Published(
      Path target, Path stagingPath, boolean readOnly, Optional<AccessMode> mode, List<String> mountFlags) {
    public Published {
      mountFlags = List.copyOf(mountFlags);
    }

    /** A target whose mode and flags are not known (the shape of records before they were kept). */
    public Published(Path target, Path stagingPath, boolean readOnly) {
      this(target, stagingPath, readOnly, Optional.empty(), List.of());
    }

    /** Same staging path, read-only flag, mode (when known) and mount flags (in any order). */
    public boolean sameAs(Path otherStaging, boolean otherReadOnly, AccessMode otherMode, List<String> otherFlags) {
      return stagingPath.equals(otherStaging) && readOnly == otherReadOnly
          && mode.map(m -> m == otherMode).orElse(true)
          && Set.copyOf(mountFlags).equals(Set.copyOf(otherFlags));
    }
  }

  public StagedVolume {
    context = Map.copyOf(context);
    stagings = List.copyOf(stagings);
    targets = List.copyOf(targets);
    // Only the ids of paths the record still has: the journal writes no others, and a record must
    // read back equal to what was put, or inspect reports the journal as differing from memory.
    java.util.Set<Path> paths = new java.util.HashSet<>();
    stagings.forEach(s -> paths.add(s.path()));
    targets.forEach(t -> paths.add(t.target()));
    Map<Path, Integer> kept = new java.util.HashMap<>(mountIds);
    kept.keySet().retainAll(paths);
    mountIds = Map.copyOf(kept);
  }

  /** A record with no mount ids (written before they were kept, or before anything was mounted). */
  public StagedVolume(
      String volumeId, Map<String, String> context, AccessType accessType, String fsType, Optional<Path> device,
      List<Staging> stagings, List<Published> targets) {
    this(volumeId, context, accessType, fsType, device, stagings, targets, Map.of());
  }

  /**
   * The shape records had before stagings carried their capability: every staging path counts as
   * complete once the device is recorded (the engine recorded it last), with {@code mountFlags}.
   */
  public StagedVolume(
      String volumeId, Map<String, String> context, AccessType accessType, String fsType, List<String> mountFlags,
      Optional<Path> device, List<Path> stagingPaths, List<Published> targets) {
    this(volumeId, context, accessType, fsType, device,
        stagingPaths.stream().map(p -> new Staging(p, Optional.empty(), mountFlags, device.isPresent())).toList(),
        targets);
  }

  public VolumeRef ref() {
    return new VolumeRef(volumeId, context);
  }

  /** Every path where the volume is staged, complete or not. */
  public List<Path> stagingPaths() {
    return stagings.stream().map(Staging::path).toList();
  }

  /** The mount flags of the first staging (what the volume was first mounted with); empty if none. */
  public List<String> mountFlags() {
    return stagings.isEmpty() ? List.of() : stagings.getFirst().mountFlags();
  }

  public Optional<Staging> staging(Path path) {
    return stagings.stream().filter(s -> s.path().equals(path)).findFirst();
  }

  public Optional<Published> target(Path target) {
    return targets.stream().filter(t -> t.target().equals(target)).findFirst();
  }

  /** The id of the mount made at {@code path}, if it was recorded. */
  public java.util.OptionalInt mountId(Path path) {
    Integer id = mountIds.get(path);
    return id == null ? java.util.OptionalInt.empty() : java.util.OptionalInt.of(id);
  }

  /** This record with {@code id} as the mount at {@code path}; unchanged for an empty id. */
  StagedVolume withMountId(Path path, java.util.OptionalInt id) {
    if (id.isEmpty()) {
      return this;
    }
    Map<Path, Integer> ids = new java.util.HashMap<>(mountIds);
    ids.put(path, id.getAsInt());
    return new StagedVolume(volumeId, context, accessType, fsType, device, stagings, targets, ids);
  }

  private Map<Path, Integer> idsWithout(Path path) {
    Map<Path, Integer> ids = new java.util.HashMap<>(mountIds);
    ids.remove(path);
    return ids;
  }

  public boolean knowsPath(Path path) {
    return staging(path).isPresent() || target(path).isPresent();
  }

  /** This record with {@code s} added, or replacing the staging at the same path. */
  StagedVolume withStaging(Staging s) {
    List<Staging> list = new ArrayList<>(stagings);
    int at = -1;
    for (int i = 0; i < list.size(); i++) {
      if (list.get(i).path().equals(s.path())) {
        at = i;
      }
    }
    if (at >= 0) {
      list.set(at, s);
    } else {
      list.add(s);
    }
    return new StagedVolume(volumeId, context, accessType, fsType, device, list, targets, mountIds);
  }

  StagedVolume withoutStagingPath(Path staging) {
    return new StagedVolume(volumeId, context, accessType, fsType, device,
        without(stagings, s -> s.path().equals(staging)), targets, idsWithout(staging));
  }

  StagedVolume withStagings(List<Staging> list) {
    return new StagedVolume(volumeId, context, accessType, fsType, device, list, targets, mountIds);
  }

  StagedVolume withDevice(Path dev) {
    return new StagedVolume(volumeId, context, accessType, fsType, Optional.of(dev), stagings, targets, mountIds);
  }

  StagedVolume withTarget(Published p) {
    List<Published> list = without(targets, t -> t.target().equals(p.target()));
    list.add(p);
    return new StagedVolume(volumeId, context, accessType, fsType, device, stagings, list, mountIds);
  }

  StagedVolume withoutTarget(Path target) {
    return new StagedVolume(volumeId, context, accessType, fsType, device, stagings,
        without(targets, t -> t.target().equals(target)), idsWithout(target));
  }

  /** A copy of {@code list}, which the caller may change, without the entries {@code gone} matches. */
  private static <T> List<T> without(List<T> list, Predicate<T> gone) {
    List<T> copy = new ArrayList<>(list);
    copy.removeIf(gone);
    return copy;
  }

  StagedVolume withTargets(List<Published> list) {
    return new StagedVolume(volumeId, context, accessType, fsType, device, stagings, list, mountIds);
  }
}
