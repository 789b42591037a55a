package dev.caravan.csi.backend.file;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.CapacityReport;
import dev.caravan.csi.backend.ContentSource;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Encryption;
import dev.caravan.csi.backend.LuksMapping;
import dev.caravan.csi.backend.ExpandResult;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.IdScheme;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.backend.Provisioned;
import dev.caravan.csi.backend.Replication;
import dev.caravan.csi.backend.ReplicationSettings;
import dev.caravan.csi.backend.SnapshotInfo;
import dev.caravan.csi.backend.Topology;
import dev.caravan.csi.backend.VolumeHealth;
import dev.caravan.csi.backend.VolumeInfo;
import dev.caravan.csi.backend.VolumeRequest;
import dev.caravan.csi.backend.VolumeStatus;
import dev.caravan.csi.backend.file.Records.SnapshotRecord;
import dev.caravan.csi.backend.file.Records.State;
import dev.caravan.csi.backend.file.Records.VolumeRecord;
import dev.caravan.csi.support.CrashPoints;
import dev.caravan.storage.block.DeviceUse;
import dev.caravan.storage.crypt.Luks2;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.file.SparseFiles;
import dev.caravan.storage.file.SparseFiles.CopyMethod;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * Controller half of the file backend: volumes are sparse files, snapshots are reflinks (or sparse
 * copies) of them, clones are reflinks of a snapshot or a volume. A snapshot or clone of a volume that
 * is mounted on this node is taken with its filesystem frozen (FIFREEZE), so it holds every write
 * acknowledged before the call. A volume attached without a mounted filesystem (staged for block
 * access) cannot be frozen: its snapshot or clone must be a reflink, which the kernel makes under the
 * image's inode lock, so it is a point-in-time copy of the device (crash-consistent, like a ZFS
 * snapshot). Where the data directory cannot make reflinks the snapshot or clone is refused: a copy
 * made while writes continue could be torn, and must never be reported ready.
 *
 * <p><b>Crash-safety rule.</b> Every create writes its record with state CREATING <em>before</em>
 * touching data, builds the data in {@code <id>.img.partial}, renames it to {@code <id>.img}, and only
 * then marks the record READY. Every delete marks the record DELETING, removes the data, then the
 * record. A retry therefore always finds one of: no record (start over), CREATING (discard any
 * partial file and redo the data from the recorded plan; if the image already exists the rename
 * happened, so just mark READY), READY (done: idempotent answer), DELETING (finish the delete).
 * Lists and lookups only show READY objects. Expansion grows the file before recording the new size,
 * so a retry sees a recorded size below the request and finishes (growing is skipped when the file is
 * already large enough).
 */
final class FileController implements ControllerBackend {
  private static final System.Logger LOG = System.getLogger(FileController.class.getName());
  static final long MIB = 1L << 20;
  static final long DEFAULT_SIZE = 1L << 30;
  static final long MAX_SIZE = 16L << 40;
  static final long MIN_BLOCK = MIB;
  static final long MIN_EXT4 = 16 * MIB;
  static final long MIN_XFS = 300 * MIB;
  static final String PARAM_FS_TYPE = "fsType";
  static final Set<String> PARAMETERS = Set.of(PARAM_FS_TYPE, Encryption.PARAMETER, ReplicationSettings.REPLICAS,
      ReplicationSettings.INTERVAL, ReplicationSettings.NODES);
  static final String CONTEXT_FS_TYPE = "fsType";
  static final String CONTEXT_NODE = "node";

  private final FileStore store;
  private final Freezes freezes;
  private final String nodeId;
  private final Topology nodeTopology;
  private final NodeUsage usage;
  private final IdScheme ids;
  private final FileReplication replication;

  FileController(FileStore store, String nodeId, NodeUsage usage) {
    this(store, nodeId, usage, false);
  }

  /**
   * @param nodeScopedIds whether new ids name this node ({@code vol-<slug>-<hash>.<node>}), so that
   *     plugin instances on other nodes know where to forward calls for them
   */
  FileController(FileStore store, String nodeId, NodeUsage usage, boolean nodeScopedIds) {
    this.store = store;
    this.freezes = new Freezes(store);
    this.nodeId = nodeId;
    this.nodeTopology = Topology.ofNode(nodeId);
    this.usage = usage;
    this.ids = FileIds.scheme(nodeScopedIds ? Optional.of(nodeId) : Optional.empty());
    this.replication = new FileReplication(store, this, nodeId, nodeScopedIds, Clock.systemUTC());
  }

  @Override
  public Optional<Replication> replication() {
    return Optional.of(replication);
  }

  @Override
  public Set<String> knownParameters() {
    return PARAMETERS;
  }

  /** LUKS2 on the loop device, opened at stage: needs libcryptsetup and the kernel's dm-crypt. */
  @Override
  public Optional<String> encryptionUnavailable() {
    return Luks2.unavailableReason().map(why -> "the file backend encrypts with LUKS2 (dm-crypt), and " + why);
  }

  @Override
  public IdScheme ids() {
    return ids;
  }

  /** Bytes promised to volumes but not yet allocated in their sparse images. */
  @Override
  public long unallocatedPromiseBytes() {
    long promised = 0;
    for (VolumeRecord r : store.volumes()) {
      Path image = store.volumeImage(r.id());
      try {
        promised += Math.max(0, r.sizeBytes() - (Files.exists(image) ? SparseFiles.allocatedBytes(image) : 0));
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.DEBUG, "volume {0} vanished while summing promised bytes", r.id());
      }
    }
    return promised;
  }

  // ---- volumes ---------------------------------------------------------------------------------

  @Override
  public Provisioned provisionVolume(VolumeRequest req) {
    String id = volumeLockKey(req.name()); // a file id is its own lock key
    String fsType = fsType(req);
    ReplicationSettings replicated = ReplicationSettings.parse(req.parameters());
    replicated.requireReplicable(nodeId, replication.attached());
    Optional<VolumeRecord> existing = store.readVolume(id);
    if (existing.isPresent() && existing.get().state() == State.DELETING) {
      finishDelete(existing.get().id());
      existing = Optional.empty();
    }
    if (existing.isPresent()) {
      VolumeRecord r = existing.get();
      requireCompatible(r, req, fsType);
      int recorded = replication.recorded(r.id()).replicas();
      if (recorded != replicated.replicas()) {
        throw CsiException.alreadyExists("name '" + req.name() + "' already exists as volume " + r.id() + " with "
            + recorded + " replica(s), not " + replicated.replicas());
      }
      return new Provisioned(r.state() == State.READY ? info(r) : finishCreate(r), false);
    }
    requireTopology(req);
    long size = plannedSize(req, fsType);
    req.source().ifPresent(s -> requireEncryptionOfSource(s, req.encrypted()));
    requireSpace(size);
    VolumeRecord r =
        new VolumeRecord(id, req.name(), State.CREATING, size, req.source(), fsType,
            AccessType.contextValue(req.accessTypes()),
            Instant.now().truncatedTo(ChronoUnit.MILLIS), req.encrypted());
    replication.recordSettings(id, replicated); // before the record: a ready volume has its settings
    store.write(r);
    CrashPoints.reach("create.after-record");
    return new Provisioned(finishCreate(r), true);
  }

  private static String fsType(VolumeRequest req) {
    String param = fsTypeParameter(req.parameters());
    if (param != null && req.fsType().isPresent() && !param.equals(req.fsType().get())) {
      throw CsiException.invalid(
          "parameters.fsType (" + param + ") contradicts volume_capabilities mount.fs_type ("
              + req.fsType().get() + ")");
    }
    return req.fsType().orElse(param == null ? "ext4" : param);
  }

  /** The fsType parameter, if given; INVALID_ARGUMENT for a filesystem this backend cannot make. */
  private static String fsTypeParameter(Map<String, String> parameters) {
    String param = parameters.get(PARAM_FS_TYPE);
    if (param != null && !List.of("ext4", "xfs").contains(param)) {
      throw CsiException.invalid(
          "parameters.fsType '" + IdRules.printable(param) + "' is not supported; supported: ext4, xfs");
    }
    return param;
  }

  private void requireCompatible(VolumeRecord r, VolumeRequest req, String fsType) {
    if (!r.name().equals(req.name())) {
      throw CsiException.internal("volume id collision between names '" + r.name() + "' and '" + req.name() + "'", null);
    }
    if (!req.capacity().admits(r.sizeBytes())) {
      throw CsiException.alreadyExists(
          "name '" + req.name() + "' already exists as volume " + r.id() + ", with " + r.sizeBytes()
              + " bytes, outside the requested capacity_range [" + req.capacity().requiredBytes() + ", "
              + (req.capacity().hasLimit() ? req.capacity().limitBytes() : "unbounded") + "]");
    }
    if (!r.source().equals(req.source())) {
      throw CsiException.alreadyExists(
          "name '" + req.name() + "' already exists as volume " + r.id() + ", with content source "
              + r.source().map(ContentSource::toString).orElse("none") + ", not "
              + req.source().map(ContentSource::toString).orElse("none"));
    }
    if (!r.fsType().equals(fsType)) {
      throw CsiException.alreadyExists(
          "name '" + req.name() + "' already exists as volume " + r.id() + ", for fs type " + r.fsType()
              + ", not " + fsType);
    }
    if (r.encrypted() != req.encrypted()) {
      throw CsiException.alreadyExists(
          "name '" + req.name() + "' already exists as volume " + r.id() + " with parameters.encryption="
              + (r.encrypted() ? "on" : "off") + ", not " + (req.encrypted() ? "on" : "off"));
    }
    Set<AccessType> recorded = info(r).accessTypes();
    if (!recorded.containsAll(req.accessTypes())) {
      throw CsiException.alreadyExists(
          "name '" + req.name() + "' already exists as volume " + r.id() + ", created for "
              + AccessType.contextValue(recorded) + " access, not " + AccessType.contextValue(req.accessTypes()));
    }
    if (!req.requisite().isEmpty() && req.requisite().stream().noneMatch(nodeTopology::satisfies)) {
      throw CsiException.alreadyExists(
          "name '" + req.name() + "' already exists as volume " + r.id() + " on node " + nodeId
              + ", which accessibility_requirements.requisite does not include");
    }
  }

  private void requireTopology(VolumeRequest req) {
    if (!req.requisite().isEmpty() && req.requisite().stream().noneMatch(nodeTopology::satisfies)) {
      throw new CsiException(
          CsiException.Kind.RESOURCE_EXHAUSTED,
          "accessibility_requirements.requisite does not include this node (" + Topology.NODE_KEY + "="
              + nodeId + "); the file backend places volumes only on the node it runs on");
    }
  }

  private long plannedSize(VolumeRequest req, String fsType) {
    CapacityRange range = req.capacity();
    long minimum = req.accessTypes().contains(AccessType.MOUNT)
        ? ("xfs".equals(fsType) ? MIN_XFS : MIN_EXT4)
        : MIN_BLOCK;
    long sourceSize = req.source().map(this::sourceSize).orElse(0L);
    if (range.hasRequired() && range.requiredBytes() > MAX_SIZE) {
      throw CsiException.outOfRange(
          "capacity_range.required_bytes " + range.requiredBytes() + " exceeds the maximum volume size of "
              + MAX_SIZE + " bytes (16 TiB)");
    }
    long wanted = range.wanted(DEFAULT_SIZE, minimum, sourceSize);
    long size = roundUp(wanted, MIB);
    if (range.hasLimit() && size > range.limitBytes()) {
      size = roundUp(wanted, 4096);
    }
    if (range.hasLimit() && size > range.limitBytes()) {
      throw CsiException.outOfRange(
          "capacity_range.limit_bytes " + range.limitBytes() + " is below what this volume needs ("
              + size + " bytes: minimum " + minimum + " for " + (minimum == MIN_BLOCK ? "block" : fsType)
              + (sourceSize > 0 ? ", source size " + sourceSize : "") + ")");
    }
    return size;
  }

  /**
   * A copy holds its source's blocks as they are, LUKS2 header included: it is encrypted exactly when
   * its source is, under the source's passphrase. A request that asks otherwise cannot be honoured
   * (INVALID_ARGUMENT: the source does not fit the parameters).
   */
  private void requireEncryptionOfSource(ContentSource source, boolean encrypted) {
    String field = source.kind() == ContentSource.Kind.SNAPSHOT
        ? "volume_content_source.snapshot.snapshot_id"
        : "volume_content_source.volume.volume_id";
    boolean sourceEncrypted = switch (source.kind()) {
      case SNAPSHOT -> replication.copy(source.id()).map(FileReplication.Copy::encrypted)
          .or(() -> readySnapshot(source.id()).map(SnapshotRecord::encrypted)).orElse(false);
      case VOLUME -> readyVolume(source.id()).map(VolumeRecord::encrypted).orElse(false);
    };
    if (sourceEncrypted && !encrypted) {
      throw CsiException.invalid(field + " " + source.id() + " is encrypted, and a copy of it is encrypted with"
          + " the same passphrase: ask for parameters." + Encryption.PARAMETER + "=on with secrets."
          + Encryption.SECRET);
    }
    if (!sourceEncrypted && encrypted) {
      throw CsiException.invalid(field + " " + source.id() + " is not encrypted, and a copy holds its blocks as"
          + " they are: parameters." + Encryption.PARAMETER + "=on cannot be honoured for it");
    }
  }

  private long sourceSize(ContentSource source) {
    return switch (source.kind()) {
      case SNAPSHOT -> replication.copy(source.id()).map(FileReplication.Copy::sizeBytes)
          .or(() -> readySnapshot(source.id()).map(SnapshotRecord::sizeBytes))
          .orElseThrow(() -> CsiException.notFound(
              "volume_content_source.snapshot.snapshot_id " + source.id() + " does not exist"));
      case VOLUME -> readyVolume(source.id())
          .orElseThrow(() -> CsiException.notFound(
              "volume_content_source.volume.volume_id " + source.id() + " does not exist"))
          .sizeBytes();
    };
  }

  private void requireSpace(long bytes) {
    long available = Filesystems.stats(store.dataDir()).availableBytes();
    if (bytes > available) {
      throw new CsiException(
          CsiException.Kind.RESOURCE_EXHAUSTED,
          "a volume of " + bytes + " bytes does not fit: the data directory " + store.dataDir() + " has "
              + available + " bytes free");
    }
  }

  private VolumeInfo finishCreate(VolumeRecord r) {
    Path image = store.volumeImage(r.id());
    if (!Files.exists(image)) {
      Path partial = FileStore.partial(image);
      FileStore.delete(partial);
      if (r.source().isPresent()) {
        Path from = sourceImage(r);
        ContentSource s = r.source().get();
        if (s.kind() == ContentSource.Kind.VOLUME) {
          copyAtOneInstant("volume_content_source.volume.volume_id", s.id(), partial,
              () -> store.deleteVolumeRecord(r.id()));
        } else {
          SparseFiles.cloneFile(from, partial); // a snapshot image is never written to
        }
        if (size(partial) < r.imageBytes()) {
          SparseFiles.grow(partial, r.imageBytes());
        }
        CrashPoints.reach("clone.after-partial");
      } else {
        SparseFiles.create(partial, r.imageBytes());
        CrashPoints.reach("create.after-partial");
      }
      FileStore.publish(partial, image);
      CrashPoints.reach("create.after-rename");
    }
    VolumeRecord ready = r.withState(State.READY);
    store.write(ready);
    return info(ready);
  }

  private Path sourceImage(VolumeRecord r) {
    ContentSource s = r.source().orElseThrow();
    Optional<FileReplication.Copy> copy = s.kind() == ContentSource.Kind.SNAPSHOT ? replication.copy(s.id())
        : Optional.empty();
    if (copy.isPresent()) {
      return copy.get().image();
    }
    boolean present = switch (s.kind()) {
      case SNAPSHOT -> readySnapshot(s.id()).isPresent();
      case VOLUME -> readyVolume(s.id()).isPresent();
    };
    if (!present) {
      // The source vanished between our CREATING record and now: forget the attempt entirely.
      store.deleteVolumeRecord(r.id());
      throw CsiException.notFound((s.kind() == ContentSource.Kind.SNAPSHOT
          ? "volume_content_source.snapshot.snapshot_id " : "volume_content_source.volume.volume_id ")
          + s.id() + " no longer exists");
    }
    return s.kind() == ContentSource.Kind.SNAPSHOT ? store.snapshotImage(s.id()) : store.volumeImage(s.id());
  }

  @Override
  public void deleteVolume(String volumeId) {
    Optional<VolumeRecord> r = store.readVolume(volumeId);
    Path image = store.volumeImage(volumeId);
    if (nothingLeft(r, image)) {
      return;
    }
    // The journal, and the kernel: a mount or a bind of the loop device's node the journal does not
    // know of (made by hand, or by a plugin whose record is gone).
    Optional<LoopDevice> loop = Files.exists(image) ? LoopDevices.find(image) : Optional.empty();
    usage.refuseDeleteInUse(volumeId, nodeId,
        loop.map(l -> DeviceUse.of(l.device())).filter(DeviceUse::inUse));
    List<String> snapshots = store.snapshots().stream()
        .filter(s -> s.sourceVolumeId().equals(volumeId) && s.state() != State.DELETING)
        .map(SnapshotRecord::id)
        .toList();
    if (!snapshots.isEmpty()) {
      throw CsiException.failedPrecondition(
          "volume_id " + volumeId + " has snapshots " + snapshots + ", which would not survive the deletion;"
              + " delete them first (DeleteSnapshot)");
    }
    // A device attached outside the journal's knowledge and used by nothing still maps the image.
    if (loop.isPresent()) {
      throw CsiException.failedPrecondition(
          "volume_id " + volumeId + " is in use: attached on node " + nodeId + " as " + loop.get().device()
              + "; detach it (NodeUnstageVolume) before deleting");
    }
    r.ifPresent(rec -> store.write(rec.withState(State.DELETING)));
    CrashPoints.reach("delete.after-mark");
    finishDelete(volumeId);
  }

  private void finishDelete(String volumeId) {
    replication.forget(volumeId); // its settings and points; the replicas on other nodes are the peer layer's to delete
    removeImage(store.volumeImage(volumeId)); // before the record: a crash leaves DELETING, which a retry finishes
    CrashPoints.reach("delete.after-image-removed");
    store.deleteVolumeRecord(volumeId);
  }

  /** Nothing of a volume or snapshot is left: no record, no image, no partial copy of one. */
  private static boolean nothingLeft(Optional<?> record, Path image) {
    return record.isEmpty() && !Files.exists(image) && !Files.exists(FileStore.partial(image));
  }

  /** A volume's or snapshot's image, and any partial copy of it. */
  private static void removeImage(Path image) {
    FileStore.delete(FileStore.partial(image));
    FileStore.delete(image);
  }

  @Override
  public Optional<VolumeInfo> findVolume(String volumeId) {
    return readyVolume(volumeId).map(this::info);
  }

  @Override
  public Optional<VolumeStatus> volumeStatus(String volumeId) {
    return readyVolume(volumeId).map(r -> {
      Path image = store.volumeImage(r.id());
      VolumeHealth health;
      List<String> attached = List.of();
      if (!Files.exists(image)) {
        health = VolumeHealth.abnormal("backing file " + image + " is missing");
      } else {
        long actual = size(image);
        health = actual < r.imageBytes()
            ? VolumeHealth.abnormal("backing file " + image + " is " + actual + " bytes, smaller than the volume ("
                + r.imageBytes() + ")")
            : VolumeHealth.OK;
      }
      if (usage.of(r.id()).isPresent() || (Files.exists(image) && LoopDevices.find(image).isPresent())) {
        attached = List.of(nodeId);
      }
      return new VolumeStatus(info(r), health, attached);
    });
  }

  @Override
  public List<VolumeInfo> listVolumes() {
    return store.volumes().stream().filter(r -> r.state() == State.READY).map(this::info).toList();
  }

  /** Ready volumes and those a create recorded and has not finished (a retry finishes them here). */
  @Override
  public Map<String, String> volumeNames() {
    Map<String, String> names = new TreeMap<>();
    store.volumes().stream().filter(r -> r.state() != State.DELETING).forEach(r -> names.putIfAbsent(r.name(), r.id()));
    return names;
  }

  // ---- snapshots -------------------------------------------------------------------------------

  @Override
  public SnapshotInfo createSnapshot(String sourceVolumeId, String name, Map<String, String> parameters) {
    String id = snapshotLockKey(name); // a file id is its own lock key
    Optional<SnapshotRecord> existing = store.readSnapshot(id);
    if (existing.isPresent() && existing.get().state() == State.DELETING) {
      finishDeleteSnapshot(id);
      existing = Optional.empty();
    }
    if (existing.isPresent()) {
      SnapshotRecord r = existing.get();
      if (!r.sourceVolumeId().equals(sourceVolumeId)) {
        throw CsiException.alreadyExists(
            "name '" + name + "' already exists as snapshot " + r.id() + " of volume " + r.sourceVolumeId()
                + ", not of source_volume_id " + sourceVolumeId);
      }
      if (r.state() == State.READY) {
        return info(r);
      }
      return finishSnapshot(r);
    }
    VolumeRecord source = readyVolume(sourceVolumeId)
        .orElseThrow(() -> CsiException.notFound("source_volume_id " + sourceVolumeId + " does not exist"));
    requireSpace(0);
    SnapshotRecord r = new SnapshotRecord(id, name, State.CREATING, sourceVolumeId, source.sizeBytes(),
        Instant.now().truncatedTo(ChronoUnit.MILLIS), source.encrypted());
    store.write(r);
    CrashPoints.reach("snapshot.after-record");
    return finishSnapshot(r);
  }

  private SnapshotInfo finishSnapshot(SnapshotRecord r) {
    Path image = store.snapshotImage(r.id());
    if (!Files.exists(image)) {
      Path source = store.volumeImage(r.sourceVolumeId());
      if (readyVolume(r.sourceVolumeId()).isEmpty() || !Files.exists(source)) {
        store.deleteSnapshotRecord(r.id());
        throw CsiException.notFound("source_volume_id " + r.sourceVolumeId() + " no longer exists");
      }
      Path partial = FileStore.partial(image);
      FileStore.delete(partial);
      copyAtOneInstant("source_volume_id", r.sourceVolumeId(), partial, () -> store.deleteSnapshotRecord(r.id()));
      CrashPoints.reach("snapshot.after-partial");
      FileStore.publish(partial, image);
      CrashPoints.reach("snapshot.after-rename");
    }
    SnapshotRecord ready = r.withState(State.READY);
    store.write(ready);
    return info(ready);
  }

  @Override
  public void deleteSnapshot(String snapshotId) {
    if (FileIds.replicaSnapshot(snapshotId).isPresent()) {
      throw CsiException.failedPrecondition("snapshot_id " + snapshotId + " is a replica's copy: replication keeps"
          + " it, and DeleteVolume of its volume deletes it");
    }
    Optional<SnapshotRecord> r = store.readSnapshot(snapshotId);
    Path image = store.snapshotImage(snapshotId);
    if (nothingLeft(r, image)) {
      return;
    }
    r.ifPresent(rec -> store.write(rec.withState(State.DELETING)));
    CrashPoints.reach("delete-snapshot.after-mark");
    finishDeleteSnapshot(snapshotId);
  }

  private void finishDeleteSnapshot(String snapshotId) {
    removeImage(store.snapshotImage(snapshotId)); // before the record, as for a volume
    CrashPoints.reach("delete-snapshot.after-image-removed");
    store.deleteSnapshotRecord(snapshotId);
  }

  @Override
  public Optional<SnapshotInfo> findSnapshot(String snapshotId) {
    return replication.copy(snapshotId).map(FileReplication::info)
        .or(() -> readySnapshot(snapshotId).map(FileController::info));
  }

  @Override
  public List<SnapshotInfo> listSnapshots() {
    List<SnapshotInfo> out = new ArrayList<>(
        store.snapshots().stream().filter(r -> r.state() == State.READY).map(FileController::info).toList());
    replication.copies().stream().map(FileReplication::info).forEach(out::add); // each replica's newest copy
    return out;
  }

  /**
   * Copies the image of volume {@code volumeId} to {@code partial} as it is at one instant, for a
   * snapshot or a clone of it. Staged here with a filesystem (on the loop device, or for an encrypted
   * volume on the LUKS2 mapping over it): the filesystem is frozen for the copy (freezing flushes dirty
   * data through the mapping to the image). Attached with no filesystem to freeze: only a reflink is taken at
   * one instant, so the copy is refused where the data directory cannot make one, decided before
   * copying and checked after (a copy_file_range fallback would be torn); a refusal leaves nothing of
   * the attempt behind ({@code forgetAttempt} drops its record). Not attached: nothing writes to it,
   * so any copy is faithful.
   *
   * @param field the request field naming the volume, for the refusal's message
   */
  void copyAtOneInstant(String field, String volumeId, Path partial, Runnable forgetAttempt) {
    Path source = store.volumeImage(volumeId);
    Optional<LoopDevice> loop = LoopDevices.find(source);
    Optional<Path> mounted = loop.flatMap(l -> mountPointOf(l.device()).or(() -> mappingOver(volumeId)
        .flatMap(FileController::mountPointOf)));
    if (mounted.isPresent()) {
      freezes.whileFrozen(volumeId, mounted.get(), () -> SparseFiles.cloneFile(source, partial));
    } else if (loop.isPresent()) {
      if (!store.reflinks()) {
        forgetAttempt.run();
        throw unfrozenCopy(field, volumeId, loop.get());
      }
      if (SparseFiles.cloneFile(source, partial) != CopyMethod.REFLINK) {
        FileStore.delete(partial);
        forgetAttempt.run();
        throw unfrozenCopy(field, volumeId, loop.get());
      }
    } else {
      SparseFiles.cloneFile(source, partial);
    }
  }

  private CsiException unfrozenCopy(String field, String volumeId, LoopDevice loop) {
    String how = usage.of(volumeId).map(NodeUsage.Use::describe).orElse("without a mounted filesystem");
    return CsiException.failedPrecondition(
        field + " " + volumeId + " is attached on node " + nodeId + " as " + loop.device() + ", "
            + how + ": with no filesystem to freeze, only a reflink is a point-in-time copy, and the data"
            + " directory " + store.dataDir() + " cannot make reflinks (FICLONE), so a copy taken now could be torn"
            + " by writes made while it runs. Unpublish and unstage the volume first (NodeUnpublishVolume,"
            + " NodeUnstageVolume), or keep the file backend's data directory on a filesystem with reflinks"
            + " (xfs with reflink=1, btrfs)");
  }

  /** Where {@code device} is mounted on this node, if it is. */
  private static Optional<Path> mountPointOf(Path device) {
    String source = device.toString();
    return MountTable.read().stream()
        .filter(e -> e.source().equals(source))
        .map(MountEntry::mountPoint)
        .findFirst();
  }

  /**
   * The device of the encrypted volume's LUKS2 mapping when it is open on the volume's loop device: the device its
   * filesystem is mounted from, the loop device holding only the ciphertext.
   */
  private Optional<Path> mappingOver(String volumeId) {
    LuksMapping mapping = store.mapping(volumeId);
    Path image = store.volumeImage(volumeId);
    return mapping.isOpenOn(loop -> LoopDevices.backs(loop, image)) ? Optional.of(mapping.path()) : Optional.empty();
  }

  // ---- expansion and capacity ------------------------------------------------------------------

  @Override
  public ExpandResult expandVolume(String volumeId, CapacityRange range, AccessType accessType) {
    VolumeRecord r = readyVolume(volumeId)
        .orElseThrow(() -> CsiException.notFound("volume_id " + volumeId + " does not exist"));
    boolean nodeExpansion = accessType != AccessType.BLOCK;
    if (range.hasLimit() && range.limitBytes() < r.sizeBytes()) {
      throw CsiException.outOfRange(
          "capacity_range.limit_bytes " + range.limitBytes() + " is below the volume's current size "
              + r.sizeBytes() + "; volumes only grow");
    }
    if (range.requiredBytes() > MAX_SIZE) {
      throw CsiException.outOfRange(
          "capacity_range.required_bytes " + range.requiredBytes() + " exceeds the maximum volume size of "
              + MAX_SIZE + " bytes (16 TiB)");
    }
    long target = roundUp(range.requiredBytes(), MIB);
    if (range.hasLimit() && target > range.limitBytes()) {
      target = roundUp(range.requiredBytes(), 4096);
    }
    Path image = store.volumeImage(volumeId);
    if (target <= r.sizeBytes()) {
      return new ExpandResult(r.sizeBytes(), nodeExpansion);
    }
    requireSpace(target - r.sizeBytes());
    VolumeRecord grown = r.withSize(target);
    if (size(image) < grown.imageBytes()) {
      SparseFiles.grow(image, grown.imageBytes());
    }
    store.write(grown);
    LoopDevices.find(image).ifPresent(LoopDevices::refreshCapacity);
    return new ExpandResult(target, nodeExpansion);
  }

  @Override
  public CapacityReport capacity(Map<String, String> parameters) {
    long available = Filesystems.stats(store.dataDir()).availableBytes();
    long minimum = "xfs".equals(fsTypeParameter(parameters)) ? MIN_XFS : MIN_BLOCK;
    return new CapacityReport(available, Math.min(MAX_SIZE, available), minimum);
  }

  // ---- helpers ---------------------------------------------------------------------------------

  Optional<VolumeRecord> readyVolume(String id) {
    return store.readVolume(id).filter(r -> r.state() == State.READY);
  }

  private Optional<SnapshotRecord> readySnapshot(String id) {
    return store.readSnapshot(id).filter(r -> r.state() == State.READY);
  }

  private VolumeInfo info(VolumeRecord r) {
    return new VolumeInfo(
        r.id(), r.name(), r.sizeBytes(), r.fsType(),
        context(r),
        r.source(), List.of(nodeTopology));
  }

  private Map<String, String> context(VolumeRecord r) {
    Map<String, String> context = new TreeMap<>(Map.of(CONTEXT_FS_TYPE, r.fsType(), CONTEXT_NODE, nodeId));
    if (!r.access().isEmpty()) {
      context.put(AccessType.CONTEXT_KEY, r.access());
    }
    if (r.encrypted()) {
      context.put(Encryption.PARAMETER, Encryption.Mode.ON.value());
    }
    return context;
  }

  private static SnapshotInfo info(SnapshotRecord r) {
    return new SnapshotInfo(r.id(), r.name(), r.sourceVolumeId(), r.sizeBytes(), r.createdAt(), true);
  }

  static long roundUp(long value, long unit) {
    return ((value + unit - 1) / unit) * unit;
  }

  private static long size(Path file) {
    try {
      return Files.size(file);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot stat " + file, e);
    }
  }
}
