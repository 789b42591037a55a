package dev.caravan.csi.node;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.NodeBackend;
import dev.caravan.csi.backend.VolumeHealth;
import dev.caravan.csi.backend.VolumeRef;
import dev.caravan.csi.node.StagedVolume.Published;
import dev.caravan.csi.node.StagedVolume.Staging;
import dev.caravan.csi.support.CrashPoints;
import dev.caravan.storage.DataPresentException;
import dev.caravan.storage.UnreadableDeviceException;
import dev.caravan.storage.MountConflictException;
import dev.caravan.storage.PathEscapeException;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.block.DeviceInUseException;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.block.Signature;
import dev.caravan.storage.fs.FormatOutcome;
import dev.caravan.storage.fs.FsStats;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountFlag;
import dev.caravan.storage.mount.MountTable;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * The node side shared by every backend: stage (attach, format if empty, grow, mount), publish (bind),
 * unpublish, unstage, stats and expansion, with the {@link NodeJournal} making all of it exact across
 * plugin restarts. Backends only attach and detach devices ({@link NodeBackend}). The caller
 * serializes calls per volume and passes paths as {@link AllowedRoots} resolved them. Mounts and
 * devices outlive the plugin process: nothing here is undone on shutdown.
 *
 * <p>A stage is recorded as complete only once every step has succeeded; a step that fails makes the
 * call fail (undoing what the call itself did), and a repeat of an incomplete stage, mount present or
 * not, runs every step again (each is idempotent) rather than trusting the mount.
 */
public final class NodeEngine {
  private static final System.Logger LOG = System.getLogger(NodeEngine.class.getName());
  // More mounts than this stacked at one target means something keeps mounting there: stop, and removing
  // the still busy target then fails the call.
  private static final int MAX_STACKED = 64;

  private final NodeBackend backend;
  private final NodeJournal journal;
  private final NodeObserver observer;
  private final HostPaths paths;

  public NodeEngine(NodeBackend backend, NodeJournal journal) {
    this(backend, journal, NodeObserver.NONE);
  }

  public NodeEngine(NodeBackend backend, NodeJournal journal, NodeObserver observer) {
    this(backend, journal, observer, Optional.empty());
  }

  /**
   * An engine whose paths below {@code roots} are created, mounted and unmounted by descriptor
   * ({@link HostPaths}), so that what the roots' check accepted is what is acted on.
   */
  public NodeEngine(NodeBackend backend, NodeJournal journal, NodeObserver observer, Optional<AllowedRoots> roots) {
    this.backend = backend;
    this.journal = journal;
    this.observer = observer;
    this.paths = new HostPaths(roots);
  }

  public NodeJournal journal() {
    return journal;
  }

  /** A validated NodeStageVolume. {@code fsType} is ignored for block access. */
  public record StageSpec(
      VolumeRef volume, Path stagingPath, AccessType accessType, String fsType, List<String> mountFlags,
      AccessMode mode) {
    public StageSpec {
      mountFlags = List.copyOf(mountFlags);
    }

    /** Read-only by its access mode or by an explicit {@code ro} mount flag. */
    boolean readOnly() {
      return mode.readOnly() || mountFlags.contains(MountFlag.READ_ONLY.option());
    }
  }

  /**
   * A validated NodePublishVolume; {@code readOnly} already includes what the access mode implies, and
   * {@code fsType} is the capability's {@code mount.fs_type}, if it names one.
   */
  public record PublishSpec(
      String volumeId, Path stagingPath, Path target, AccessType accessType, Optional<String> fsType,
      boolean readOnly, AccessMode mode, List<String> mountFlags) {
    public PublishSpec {
      mountFlags = List.copyOf(mountFlags);
    }
  }

  /**
   * NodeGetVolumeStats: filesystem figures (mount access, when mounted), device size (block access;
   * 0 for mount access, where the filesystem's figures say more), health.
   */
  public record Stats(AccessType accessType, Optional<FsStats> fs, long deviceBytes, VolumeHealth health) {}

  // ---- stage / unstage -------------------------------------------------------------------------

  public void stage(StageSpec s) {
    String id = s.volume().volumeId();
    Path staging = s.stagingPath();
    String fsType = s.accessType() == AccessType.MOUNT ? s.fsType() : "";
    Optional<StagedVolume> current = journal.get(id);
    Optional<Staging> here = current.flatMap(c -> c.staging(staging));
    if (current.isPresent()) {
      StagedVolume c = current.get();
      if (c.accessType() != s.accessType() || !c.fsType().equals(fsType)) {
        throw CsiException.alreadyExists(
            "volume " + id + " is already staged on this node for " + describe(c.accessType(), c.fsType())
                + " at " + c.stagingPaths() + "; this request asks for " + describe(s.accessType(), fsType));
      }
    }
    if (here.isPresent()) {
      Staging h = here.get();
      if (!h.sameCapability(s.mode(), s.mountFlags())) {
        throw CsiException.alreadyExists(
            "volume " + id + " is already staged at staging_target_path " + staging + " with "
                + describe(h.mode(), h.mountFlags()) + "; this request asks for "
                + describe(Optional.of(s.mode()), s.mountFlags())
                + " (a repeated NodeStageVolume must carry an identical volume_capability)");
      }
      if (h.complete() && (s.accessType() == AccessType.BLOCK
          ? recordedDeviceHolds(current.get(), s.volume())
          : MountTable.isMountPoint(staging))) {
        return;
      }
    }
    if (here.isEmpty()) {
      requireUnclaimed(id, staging);
    }
    boolean wasMounted = s.accessType() == AccessType.MOUNT && MountTable.isMountPoint(staging);
    Staging intent = new Staging(staging, Optional.of(s.mode()), s.mountFlags(), false);
    StagedVolume record = current
        .orElseGet(() -> new StagedVolume(id, s.volume().context(), s.accessType(), fsType, Optional.empty(),
            List.of(), List.of()))
        .withStaging(intent);
    journal.put(record);
    CrashPoints.reach("stage.after-journal");
    try {
      Path device = timed("attach", () -> backend.attach(s.volume()));
      CrashPoints.reach("stage.after-attach");
      // A device attached before (for another staging path, or by a stage cut short) does not show
      // on its own what its backing object has grown to since.
      backend.refresh(s.volume(), device);
      OptionalInt mountId = OptionalInt.empty();
      if (s.accessType() == AccessType.MOUNT) {
        mountId = mountFilesystem(id, device, s, fsType);
      }
      journal.put(record.withDevice(device).withStaging(intent.completed()).withMountId(staging, mountId));
    } catch (RuntimeException e) {
      rollBackStage(current, wasMounted, s);
      throw translate(e);
    }
  }

  /**
   * Whether the device a completed block stage recorded is still the volume's. A device number is
   * only a number: after a reboot (the journal is on disk) or a detach behind the plugin's back, it
   * can name another volume's device, and a repeated stage that answered OK would have the next
   * publish bind that device. When it is not, the stage runs every step again, attaching anew.
   */
  private boolean recordedDeviceHolds(StagedVolume v, VolumeRef volume) {
    Optional<Path> device = v.device();
    if (device.isPresent() && backend.holds(volume, device.get())) {
      return true;
    }
    LOG.log(System.Logger.Level.WARNING, "volume " + v.volumeId() + ": the recorded device "
        + device.map(Path::toString).orElse("(none)") + " is no longer this volume's; staging it again");
    return false;
  }

  /**
   * Refuses a new staging path that is, holds or lies inside a path where a volume is published or
   * another volume is staged: a mount there would hide that volume's data from its workload, and
   * the journal would record one path for two roles.
   */
  private void requireUnclaimed(String id, Path staging) {
    for (StagedVolume v : journal.all()) {
      List<Path> claimed = new ArrayList<>(v.targets().stream().map(Published::target).toList());
      if (!v.volumeId().equals(id)) {
        claimed.addAll(v.stagingPaths());
      }
      for (Path p : claimed) {
        if (staging.startsWith(p) || p.startsWith(staging)) {
          String relation = staging.equals(p) ? " is " : p.startsWith(staging) ? " holds " : " lies in ";
          throw CsiException.invalid(
              "staging_target_path " + staging + relation + p + ", where volume " + v.volumeId() + " is "
                  + (v.stagingPaths().contains(p) ? "staged" : "published")
                  + "; each volume needs a staging path of its own");
        }
      }
    }
  }

  private OptionalInt mountFilesystem(String id, Path device, StageSpec s, String fsType) {
    // Held open from the probe to the mount: the kernel drops a block device's cached blocks when its
    // last opener closes it, so otherwise the size check and the mount would read again, through the
    // loop or the network, the superblocks the probe has just read. A plain read-only open: it keeps
    // nothing else out (the probe's and mkfs's exclusive opens, the mount's claim) and writes nothing.
    FileChannel held = holdOpen(device);
    try {
      return formatAndMount(id, device, s, fsType);
    } finally {
      if (held != null) {
        try {
          held.close();
        } catch (IOException e) {
          LOG.log(System.Logger.Level.DEBUG, "closing " + device, e);
        }
      }
    }
  }

  /** The device opened for reading, or null if it cannot be (the probe then says why). */
  private static FileChannel holdOpen(Path device) {
    try {
      return FileChannel.open(device, StandardOpenOption.READ);
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  /** Formats if empty, grows, mounts; the mount's id when the staging path lies below a root. */
  private OptionalInt formatAndMount(String id, Path device, StageSpec s, String fsType) {
    FsType fs = FsType.parse(fsType)
        .orElseThrow(() -> CsiException.invalid("fs type '" + fsType + "' is not supported; supported: ext4, xfs"));
    FormatOutcome outcome;
    long formatStart = System.nanoTime();
    try {
      outcome = s.readOnly() ? requireFormatted(id, device, fs) : Filesystems.formatIfEmpty(device, fs, List.of());
      observer.operation("format", outcome == FormatOutcome.FORMATTED ? "formatted" : "existing",
          System.nanoTime() - formatStart);
    } catch (DataPresentException e) {
      observer.operation("format", "refused", System.nanoTime() - formatStart);
      throw CsiException.failedPrecondition(
          "refusing to format " + device + " for volume " + id + " as " + fsType + ": it already holds "
              + e.found());
    } catch (UnreadableDeviceException e) {
      // Unknown is never empty: a start that cannot be read may hold the volume's filesystem.
      observer.operation("format", "refused", System.nanoTime() - formatStart);
      throw new CsiException(CsiException.Kind.FAILED_PRECONDITION,
          "refusing to format " + device + " for volume " + id + " as " + fsType + ": " + e.reason(), e);
    } catch (RuntimeException e) {
      observer.operation("format", "error", System.nanoTime() - formatStart);
      throw e;
    }
    CrashPoints.reach("stage.after-format");
    // The volume may have grown while it was not staged (Nomad sends no NodeExpand then). ext4 is
    // grown before it is mounted, which needs no CAP_SYS_RESOURCE (unless another usage of the
    // volume has it mounted already); xfs can only grow once mounted. The superblock is read first
    // so that a stage with nothing to grow starts no process. A read-only stage cannot grow it: the
    // next read-write stage or NodeExpandVolume does.
    boolean growOnline = false;
    Optional<String> offlineFailure = Optional.empty();
    long fsBytes = outcome == FormatOutcome.ALREADY_FORMATTED && !s.readOnly() ? Filesystems.size(device, fs) : 0;
    long deviceBytes = fsBytes > 0 ? BlockDevices.size(device) : 0;
    if (fsBytes < deviceBytes) {
      if (fs == FsType.EXT4) {
        offlineFailure = growUnmounted(id, device);
        growOnline = offlineFailure.isPresent();
      } else {
        growOnline = true;
      }
    }
    paths.makeDirectory(s.stagingPath());
    Set<MountFlag> flags = flags(s.mountFlags(), s.readOnly());
    String data = data(s.mountFlags());
    if (fs == FsType.XFS) {
      // Clones and snapshots share the source's XFS UUID; without nouuid the kernel refuses to mount
      // a clone while its source is mounted.
      data = data.isEmpty() ? "nouuid" : data + ",nouuid";
    }
    if (s.readOnly()) {
      // A read-only mount still replays a dirty journal (log) onto the device; these skip the replay,
      // so a read-only stage writes nothing (the filesystem is seen as of its last checkpoint).
      String noReplay = fs == FsType.EXT4 ? "noload" : "norecovery";
      data = data.isEmpty() ? noReplay : data + "," + noReplay;
    }
    String mountData = data;
    OptionalInt mountId = timed("mount", () -> paths.mount(device, s.stagingPath(), fs.id(), flags, mountData));
    CrashPoints.reach("stage.after-mount");
    if (growOnline) {
      String before = offlineFailure.map(f -> " (growing it unmounted failed before: " + f + ")").orElse("");
      try {
        timedRun("grow", () -> Filesystems.grow(s.stagingPath()));
      } catch (StorageException e) {
        throw CsiException.internal(
            "NodeStageVolume of volume " + id + " failed at its grow step: the " + fsType + " filesystem on "
                + device + " spans " + fsBytes + " of the device's " + deviceBytes + " bytes and could not be"
                + " grown at staging_target_path " + s.stagingPath() + ": " + e.getMessage()
                + before + "; a repeated NodeStageVolume tries the grow again", e);
      }
    }
    return mountId;
  }

  /**
   * The format step of a read-only stage, which never writes to the device: a filesystem of the
   * requested type is the answer, anything else (an empty device included) refuses the stage.
   */
  private static FormatOutcome requireFormatted(String id, Path device, FsType fs) {
    Signature found = Probe.probe(device);
    if (found.kind() == Signature.Kind.FILESYSTEM && found.type().equals(Optional.of(fs.id()))) {
      return FormatOutcome.ALREADY_FORMATTED;
    }
    if (!found.isEmpty()) {
      throw new DataPresentException(device, found.describe());
    }
    throw CsiException.failedPrecondition(
        "volume " + id + " is not formatted (" + device + " holds no filesystem), and a read-only NodeStageVolume"
            + " never formats: stage it read-write once to make its " + fs.id() + " filesystem");
  }

  /** Empty when the filesystem was grown unmounted; else why not, and it is to be grown online. */
  private static Optional<String> growUnmounted(String id, Path device) {
    try {
      Filesystems.growUnmounted(device, FsType.EXT4);
      return Optional.empty();
    } catch (StorageException e) {
      LOG.log(System.Logger.Level.INFO, "growing " + id + " online instead: " + e.getMessage());
      return Optional.of(e.getMessage());
    }
  }

  /**
   * Undoes what a failed stage did: the mount it made (not one that was there before), and the device
   * and record if nothing else is staged; a staging path the record already had stays in it, marked
   * incomplete, so that the next stage there runs every step again.
   */
  private void rollBackStage(Optional<StagedVolume> before, boolean wasMounted, StageSpec s) {
    Path staging = s.stagingPath();
    try {
      if (s.accessType() == AccessType.MOUNT && !wasMounted) {
        paths.unmount(staging, OptionalInt.empty());
      }
      if (before.isEmpty() || before.get().stagings().isEmpty()) {
        backend.detach(s.volume());
        journal.remove(s.volume().volumeId());
      } else {
        StagedVolume b = before.get();
        journal.put(b.staging(staging).map(h -> b.withStaging(h.incomplete())).orElse(b));
      }
    } catch (RuntimeException cleanup) {
      LOG.log(System.Logger.Level.WARNING, "could not roll back a failed stage of " + s.volume().volumeId(), cleanup);
    }
  }

  public void unstage(String volumeId, Path stagingPath) {
    Optional<StagedVolume> current = journal.get(volumeId);
    if (current.isEmpty() || current.get().staging(stagingPath).isEmpty()) {
      return;
    }
    StagedVolume c = pruneTargets(current.get());
    List<Path> blocking = c.targets().stream()
        .filter(t -> t.stagingPath().equals(stagingPath) || c.stagingPaths().size() == 1)
        .map(Published::target)
        .toList();
    if (!blocking.isEmpty()) {
      throw CsiException.failedPrecondition(
          "volume " + volumeId + " is still published at " + blocking + "; unpublish those targets"
              + " (NodeUnpublishVolume) before unstaging " + stagingPath);
    }
    try {
      if (c.accessType() == AccessType.MOUNT) {
        observer.releasing(volumeId, stagingPath);
        timed("unmount", () -> paths.unmount(stagingPath, c.mountId(stagingPath)));
        CrashPoints.reach("unstage.after-unmount");
      }
      StagedVolume remaining = c.withoutStagingPath(stagingPath);
      if (remaining.stagingPaths().isEmpty()) {
        timedRun("detach", () -> backend.detach(c.ref(), c.device()));
        CrashPoints.reach("unstage.after-detach");
        journal.remove(volumeId);
      } else {
        journal.put(remaining);
      }
    } catch (RuntimeException e) {
      throw translate(e);
    }
  }

  /** Drops publish targets that are no longer mounted (unmounted behind our back or before a crash). */
  private StagedVolume pruneTargets(StagedVolume c) {
    if (c.targets().isEmpty()) {
      return c;
    }
    List<Published> live = c.targets().stream().filter(t -> MountTable.isMountPoint(t.target())).toList();
    if (live.size() == c.targets().size()) {
      return c;
    }
    StagedVolume pruned = c.withTargets(live);
    journal.put(pruned);
    return pruned;
  }

  // ---- publish / unpublish ---------------------------------------------------------------------

  public void publish(PublishSpec p) {
    StagedVolume c = journal.get(p.volumeId())
        .orElseThrow(() -> CsiException.failedPrecondition(
            "volume " + p.volumeId() + " is not staged on this node; call NodeStageVolume first"));
    if (c.staging(p.stagingPath()).isEmpty()) {
      throw CsiException.failedPrecondition(
          "volume " + p.volumeId() + " is staged at " + c.stagingPaths() + ", not at staging_target_path "
              + p.stagingPath());
    }
    Optional<Published> existing = c.target(p.target());
    if (existing.isPresent() && MountTable.isMountPoint(p.target())) {
      Published e = existing.get();
      boolean sameFs = p.fsType().isEmpty() || p.fsType().get().equals(c.fsType());
      if (c.accessType() == p.accessType() && sameFs
          && e.sameAs(p.stagingPath(), p.readOnly(), p.mode(), p.mountFlags())) {
        return;
      }
      throw CsiException.alreadyExists(
          "target_path " + p.target() + " is already published for volume " + p.volumeId() + " ("
              + describe(c.accessType(), c.fsType()) + ", readonly=" + e.readOnly() + ", "
              + describe(e.mode(), e.mountFlags()) + ", from " + e.stagingPath() + "); this request asks for "
              + describe(p.accessType(), p.fsType().orElse(c.fsType())) + ", readonly=" + p.readOnly() + ", "
              + describe(Optional.of(p.mode()), p.mountFlags()) + ", from " + p.stagingPath());
    }
    // The spec's row for a capability the volume does not support.
    if (c.accessType() != p.accessType()
        || (p.accessType() == AccessType.MOUNT && p.fsType().filter(f -> !f.equals(c.fsType())).isPresent())) {
      throw CsiException.failedPrecondition(
          "volume_capability asks for " + describe(p.accessType(), p.fsType().orElse("")) + " but volume "
              + p.volumeId() + " was staged for " + describe(c.accessType(), c.fsType()));
    }
    StagedVolume live = pruneTargets(c);
    List<Published> others = live.targets().stream().filter(t -> !t.target().equals(p.target())).toList();
    boolean soleTarget = p.mode().soleTarget()
        || others.stream().anyMatch(t -> t.mode().map(AccessMode::soleTarget).orElse(false));
    if (!others.isEmpty() && soleTarget) {
      throw CsiException.failedPrecondition(
          "volume " + p.volumeId() + " is published on this node at "
              + others.stream().map(t -> t.target() + " (" + t.mode().map(Enum::name).orElse("mode unknown") + ")")
                  .toList()
              + "; " + AccessMode.SINGLE_NODE_SINGLE_WRITER + " allows a single publish target per node, so"
              + " target_path " + p.target() + " (" + p.mode() + ") is refused; unpublish the other target first");
    }
    if (p.accessType() == AccessType.BLOCK
        && live.device().filter(d -> !backend.holds(live.ref(), d)).isPresent()) {
      throw CsiException.failedPrecondition(
          "volume " + p.volumeId() + ": the device recorded at its stage, " + live.device().get() + ", is no"
              + " longer this volume's (detached, or its number given to another volume since); stage it again"
              + " (NodeStageVolume) before publishing");
    }
    Published entry = new Published(p.target(), p.stagingPath(), p.readOnly(), Optional.of(p.mode()), p.mountFlags());
    journal.put(live.withTarget(entry));
    CrashPoints.reach("publish.after-journal");
    boolean created = false;
    OptionalInt mountId = OptionalInt.empty();
    try {
      if (p.accessType() == AccessType.MOUNT) {
        created = paths.makeDirectory(p.target());
        CrashPoints.reach("publish.after-target");
        mountId = timed("bind", () -> paths.bind(p.stagingPath(), p.target(), p.readOnly()));
      } else {
        Path device = live.device().orElseThrow(() -> CsiException.failedPrecondition(
            "volume " + p.volumeId() + " has no device recorded; stage it again"));
        created = createFile(p.target());
        CrashPoints.reach("publish.after-target");
        mountId = timed("bind", () -> paths.bindDevice(device, p.target(), p.readOnly()));
      }
      CrashPoints.reach("publish.after-bind");
      if (mountId.isPresent()) {
        journal.put(journal.get(p.volumeId()).orElseThrow().withMountId(p.target(), mountId));
      }
    } catch (RuntimeException e) {
      try {
        if (created) {
          paths.removeIfEmpty(p.target());
        }
        journal.put(journal.get(p.volumeId()).orElse(live).withoutTarget(p.target()));
      } catch (RuntimeException cleanup) {
        LOG.log(System.Logger.Level.WARNING, "could not roll back a failed publish at " + p.target(), cleanup);
      }
      throw translate(e);
    }
  }

  public void unpublish(String volumeId, Path target) {
    Optional<StagedVolume> current = journal.get(volumeId);
    Optional<Published> recorded = current.flatMap(c -> c.target(target));
    if (recorded.isEmpty() && journal.all().stream().anyMatch(v -> v.stagingPaths().contains(target))) {
      // The staging mount's source is the volume's device, so the ownership check below would take it
      // for this volume's publish: never undo a stage through NodeUnpublishVolume.
      throw CsiException.notFound(
          "volume " + volumeId + " is not published at target_path " + target + ": that is a staging path,"
              + " which only NodeUnstageVolume undoes");
    }
    try {
      if (recorded.isPresent()) {
        // Ours: undo whatever is stacked there (a crash between mount and journal can leave the same
        // bind twice) without reading the mount table. Asking statx first keeps the unmount count (a
        // metric) to the mounts actually removed.
        // With the mount's id recorded, only that mount is undone; a different one there is refused.
        OptionalInt mountId = current.get().mountId(target);
        int undone = 0;
        while (undone < (mountId.isPresent() ? 1 : MAX_STACKED) && MountTable.isMountPoint(target)
            && timed("unmount", () -> paths.unmount(target, mountId))) {
          undone++;
        }
        if (undone > 0) {
          CrashPoints.reach("unpublish.after-unmount");
        }
        removeTarget(target);
        CrashPoints.reach("unpublish.after-remove-target");
        journal.put(current.get().withoutTarget(target));
        return;
      }
      // Not recorded: one read of the mount table: how many mounts are stacked there, and the topmost.
      List<MountEntry> stacked = mountsAt(MountTable.read(), target);
      if (!stacked.isEmpty()) {
        MountEntry top = topmost(stacked);
        if (recorded.isEmpty() && !belongsTo(top, current)) {
          throw CsiException.notFound(
              "volume " + volumeId + " is not published at target_path " + target + " (the mount there, from "
                  + top.source() + ", was not made by this plugin for this volume)");
        }
        // A target can carry the same bind twice after a crash between mount and journal; undo all.
        // unmount returns false once nothing is left there.
        for (int i = 0; i < stacked.size() && timed("unmount", () -> paths.unmount(target, OptionalInt.empty())); i++) {
          // next one down
        }
        CrashPoints.reach("unpublish.after-unmount");
      }
      removeTarget(target);
      CrashPoints.reach("unpublish.after-remove-target");
      if (recorded.isPresent()) {
        journal.put(current.get().withoutTarget(target));
      }
    } catch (CsiException e) {
      throw e;
    } catch (MountConflictException e) {
      throw CsiException.failedPrecondition(
          "target_path " + target + " has a mount this plugin did not make for volume " + volumeId + " on top of"
              + " its own: " + e.getMessage());
    } catch (RuntimeException e) {
      throw translate(e);
    }
  }

  /**
   * The mounts stacked at exactly {@code path} in an already read table, as {@link MountTable#at} sees
   * them; empty when nothing is mounted there or the path does not exist.
   */
  private static List<MountEntry> mountsAt(List<MountEntry> table, Path path) {
    return MountTable.stackedAt(table, path);
  }

  /** The one on top: mounting over a mount point makes the new mount the child of the one it covers. */
  private static MountEntry topmost(List<MountEntry> stacked) {
    return stacked.stream()
        .filter(m -> stacked.stream().noneMatch(other -> other.parentId() == m.id()))
        .findFirst()
        .orElse(stacked.getLast());
  }

  private static boolean belongsTo(MountEntry mount, Optional<StagedVolume> volume) {
    Optional<Path> device = volume.flatMap(StagedVolume::device);
    if (device.isEmpty()) {
      return false;
    }
    String dev = device.get().toString();
    return mount.source().equals(dev) || mount.root().equals("/" + device.get().getFileName());
  }

  private void removeTarget(Path target) {
    if (!paths.removeIfEmpty(target) && Files.isDirectory(target, LinkOption.NOFOLLOW_LINKS)) {
      LOG.log(System.Logger.Level.WARNING, "leaving target directory " + target + " in place (not empty, or in use)");
    }
  }

  // ---- stats / expand --------------------------------------------------------------------------

  public Stats stats(String volumeId, Path path) {
    StagedVolume c = known(volumeId, path, "volume_path");
    if (c.accessType() == AccessType.BLOCK) {
      if (!Files.exists(path)) {
        throw CsiException.notFound("volume_path " + path + " does not exist");
      }
      VolumeHealth health = backend.health(c.ref(), c.device());
      long deviceBytes = c.device().filter(Files::exists).map(BlockDevices::size).orElse(0L);
      if (!health.abnormal() && c.target(path).isPresent() && !MountTable.isMountPoint(path)) {
        health = VolumeHealth.abnormal("the device is no longer bound at " + path);
      }
      return new Stats(AccessType.BLOCK, Optional.empty(), deviceBytes, health);
    }
    // A mounted volume: one statx (a mount point, so it exists), the health check, one statvfs.
    if (MountTable.isMountPoint(path)) {
      VolumeHealth health = backend.health(c.ref(), c.device());
      return new Stats(AccessType.MOUNT, Optional.of(Filesystems.stats(path)), 0, health);
    }
    if (!Files.exists(path)) {
      throw CsiException.notFound("volume_path " + path + " does not exist");
    }
    VolumeHealth health = backend.health(c.ref(), c.device());
    VolumeHealth gone = VolumeHealth.abnormal(
        "nothing is mounted at " + path + " any more (volume " + volumeId + " should be)"
            + (health.abnormal() ? "; " + health.message() : ""));
    return new Stats(AccessType.MOUNT, Optional.empty(), 0, gone);
  }

  /** Grows the device (if the backend needs to) and the filesystem; returns the device size. */
  public long expand(String volumeId, Path volumePath) {
    return expand(volumeId, volumePath, Optional.empty(), Optional.empty());
  }

  /**
   * NodeExpandVolume: as {@link #expand(String, Path)}. {@code accessType} and {@code fsType} are what the request's capability names, if it does:
   * INVALID_ARGUMENT unless the volume is staged that way (the spec's row for a capability the volume
   * does not support).
   */
  public long expand(String volumeId, Path volumePath, Optional<AccessType> accessType, Optional<String> fsType) {
    return expand(volumeId, volumePath, accessType, fsType, Map.of());
  }

  /**
   * As {@link #expand(String, Path, Optional, Optional)}, with the request's {@code secrets}: a backend
   * whose device needs a key to grow (an encrypted volume's mapping) finds it there.
   */
  public long expand(String volumeId, Path volumePath, Optional<AccessType> accessType, Optional<String> fsType,
      Map<String, String> secrets) {
    StagedVolume c = known(volumeId, volumePath, "volume_path");
    if (accessType.filter(t -> t != c.accessType()).isPresent()
        || (c.accessType() == AccessType.MOUNT && fsType.filter(f -> !f.equals(c.fsType())).isPresent())) {
      throw CsiException.invalid(
          "volume_capability names " + describe(accessType.orElse(c.accessType()), fsType.orElse(""))
              + " but volume " + volumeId + " is staged for " + describe(c.accessType(), c.fsType()));
    }
    try {
      backend.refresh(new VolumeRef(c.volumeId(), c.ref().context(), secrets));
      if (c.accessType() == AccessType.MOUNT) {
        List<MountEntry> table = MountTable.read();
        Path mounted = !mountsAt(table, volumePath).isEmpty()
            ? volumePath
            : c.stagingPaths().stream().filter(p -> !mountsAt(table, p).isEmpty()).findFirst()
                .orElseThrow(() -> CsiException.failedPrecondition(
                    "volume " + volumeId + " has no mounted filesystem on this node to grow"));
        timedRun("grow", () -> Filesystems.grow(mounted));
      }
      return c.device().map(BlockDevices::size).orElse(0L);
    } catch (CsiException e) {
      throw e;
    } catch (RuntimeException e) {
      throw translate(e);
    }
  }

  private StagedVolume known(String volumeId, Path path, String field) {
    StagedVolume c = journal.get(volumeId)
        .orElseThrow(() -> CsiException.notFound("volume " + volumeId + " is not staged or published on this node"));
    if (!c.knowsPath(path)) {
      throw CsiException.notFound(
          field + " " + path + " is not a path where volume " + volumeId + " is staged or published");
    }
    return c;
  }

  // ---- start-up reconciliation -----------------------------------------------------------------

  /**
   * Compares the journal with the mount table after a (re)start. Publish targets that are no longer
   * mounted are dropped from the journal; staged volumes whose mount or backing object has gone are
   * kept (Unstage must still clean them up) and reported. Returns the findings in plain words.
   */
  public List<String> reconcile() {
    Set<Path> mounted = MountTable.read().stream().map(MountEntry::mountPoint).collect(Collectors.toSet());
    List<String> findings = new ArrayList<>();
    for (StagedVolume recorded : journal.all()) {
      // Records written before paths were resolved hold them as the CO spelt them; compared with the
      // mount table as they are, a symlinked data directory would make every live target look gone.
      StagedVolume v = canonicalPaths(recorded);
      if (!v.equals(recorded)) {
        journal.put(v);
      }
      List<Published> live = v.targets().stream().filter(t -> mounted.contains(t.target())).toList();
      for (Published t : v.targets()) {
        if (!live.contains(t)) {
          findings.add("volume " + v.volumeId() + ": publish target " + t.target() + " is no longer mounted; forgotten");
        }
      }
      if (live.size() != v.targets().size()) {
        journal.put(v.withTargets(live));
      }
      for (Staging staging : v.stagings()) {
        if (v.accessType() == AccessType.MOUNT && !mounted.contains(staging.path())) {
          findings.add("volume " + v.volumeId() + ": staging path " + staging.path() + " is not mounted");
        }
        if (!staging.complete()) {
          findings.add("volume " + v.volumeId() + ": the stage at " + staging.path() + " did not complete; the next"
              + " NodeStageVolume there runs every step again");
        }
      }
      VolumeHealth h = backend.health(v.ref(), v.device());
      if (h.abnormal()) {
        findings.add("volume " + v.volumeId() + ": " + h.message());
      }
    }
    for (NodeJournal.Unreadable u : journal.unreadable()) {
      findings.add("volume " + u.volumeId() + ": its journal record " + u.file() + " cannot be read; " + (u.stale()
          ? "it was written before this boot, so nothing it describes exists; kept for a person to look at"
          : "kept, and the volume counts as in use on this node until the file is moved away"));
    }
    return findings;
  }

  private static StagedVolume canonicalPaths(StagedVolume v) {
    return v.withStagings(v.stagings().stream()
            .map(s -> new Staging(AllowedRoots.canonical(s.path()), s.mode(), s.mountFlags(), s.complete()))
            .toList())
        .withTargets(v.targets().stream()
            .map(t -> new Published(AllowedRoots.canonical(t.target()), AllowedRoots.canonical(t.stagingPath()),
                t.readOnly(), t.mode(), t.mountFlags()))
            .toList());
  }

  // ---- helpers ---------------------------------------------------------------------------------

  static Set<MountFlag> flags(List<String> options, boolean readOnly) {
    EnumSet<MountFlag> flags = EnumSet.noneOf(MountFlag.class);
    for (String o : options) {
      MountFlag.fromOption(o).ifPresent(flags::add);
    }
    if (readOnly) {
      flags.add(MountFlag.READ_ONLY);
    }
    return flags;
  }

  static String data(List<String> options) {
    return options.stream().filter(MountOptions.DATA_OPTIONS::contains).collect(Collectors.joining(","));
  }

  private static String describe(AccessType type, String fsType) {
    return type == AccessType.BLOCK ? "block access" : fsType.isEmpty() ? "a mount" : "a " + fsType + " mount";
  }

  private static String describe(Optional<AccessMode> mode, List<String> mountFlags) {
    return "access mode " + mode.map(Enum::name).orElse("(not recorded)") + " and mount flags " + mountFlags;
  }

  private boolean createFile(Path file) {
    if (Files.isDirectory(file, LinkOption.NOFOLLOW_LINKS)) {
      throw CsiException.failedPrecondition(
          "target_path " + file + " is a directory; block access needs a file there (or nothing)");
    }
    return paths.createFile(file);
  }

  /** Runs one host operation, telling the observer how long it took and how it ended. */
  private <T> T timed(String op, Supplier<T> body) {
    long start = System.nanoTime();
    try {
      T result = body.get();
      observer.operation(op, "ok", System.nanoTime() - start);
      return result;
    } catch (RuntimeException e) {
      observer.operation(op, "error", System.nanoTime() - start);
      throw e;
    }
  }

  private void timedRun(String op, Runnable body) {
    timed(op, () -> {
      body.run();
      return Boolean.TRUE;
    });
  }

  private static RuntimeException translate(RuntimeException e) {
    if (e instanceof DeviceInUseException d) {
      // A detach refused: something the journal does not record (a bind made by hand, or by a plugin
      // whose record is gone) still uses the device.
      return CsiException.failedPrecondition(d.getMessage() + "; undo that use first");
    }
    if (e instanceof PathEscapeException escape) {
      // The path passed AllowedRoots' check, and then a symlink appeared on its way: refused as that check refuses it.
      return CsiException.invalid(escape.getMessage() + "; the plugin never mounts, creates or removes through a link");
    }
    if (e instanceof MountConflictException m) {
      return CsiException.alreadyExists(
          m.target() + " already has " + m.existingSource() + " mounted; not mounting over it");
    }
    return e;
  }
}
