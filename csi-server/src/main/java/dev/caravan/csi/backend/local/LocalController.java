package dev.caravan.csi.backend.local;

import static dev.caravan.csi.backend.local.ZfsErrorsToCsi.guard;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.CapacityReport;
import dev.caravan.csi.backend.ContentSource;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.CsiException.Kind;
import dev.caravan.csi.backend.Encryption;
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
import dev.caravan.csi.backend.local.LocalIds.SnapshotId;
import dev.caravan.csi.backend.local.LocalIds.VolumeId;
import dev.caravan.csi.support.CrashPoints;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.block.DeviceUse;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.zfs.DatasetProperties;
import dev.caravan.storage.zfs.KeyStatus;
import dev.caravan.storage.zfs.Pbkdf2Iters;
import dev.caravan.storage.zfs.PoolStatus;
import dev.caravan.storage.zfs.Property;
import dev.caravan.storage.zfs.WrongKeyException;
import dev.caravan.storage.zfs.Zfs;
import dev.caravan.storage.zfs.ZfsException;
import dev.caravan.storage.zfs.ZvolSpec;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;

/**
 * Controller half of the {@code local} backend: every volume is a zvol {@code
 * <pool>/<parent-dataset>/vol-...} on this node, every snapshot a ZFS snapshot of it, every clone an
 * independent send/receive copy (so it survives deletion of its source).
 *
 * <p><b>State lives in ZFS only.</b> What CreateVolume was asked for is recorded as user properties
 * on the zvol ({@code caravan:csi-name}, {@code caravan:fstype}, {@code caravan:source}, {@code
 * caravan:node}), set atomically with the create ({@code lzc_create}), so there is no side file to
 * get out of step. A clone gets them with its receive, as received properties, and locally, with the
 * marker, in the copy's last step ({@link Zfs#finishCopy}); a clone a crash interrupted in between is
 * an {@linkplain Zfs#isUnfinishedCopy unfinished copy}, which the retried CreateVolume (same name,
 * so the same dataset) recognises by those properties and finishes. A zvol without {@code
 * caravan:managed} is never modified or destroyed (the facade enforces it too).
 *
 * <p><b>Ownership.</b> Ids carry the node. A call about a volume of another node is refused with
 * UNAVAILABLE naming that node, before anything is done here: with peers ({@code --peer-listen}) such
 * calls never get here, {@link dev.caravan.csi.peer.RoutingControllerService} sends them to the owner.
 */
final class LocalController implements ControllerBackend {
  static final long MIB = 1L << 20;
  static final long DEFAULT_SIZE = 1L << 30;
  static final long MIN_EXT4 = 16 * MIB;
  static final long MIN_XFS = 300 * MIB;

  static final String PROP_NAME = "caravan:csi-name";
  static final String PROP_FS_TYPE = "caravan:fstype";
  static final String PROP_SOURCE = "caravan:source";
  static final String PROP_NODE = "caravan:node";
  /** The access types CreateVolume was asked for ({@link AccessType#contextValue}); absent on older zvols. */
  static final String PROP_ACCESS = "caravan:access";
  /** Replication, as CreateVolume asked for it ({@link ReplicationSettings}); absent when not replicated. */
  static final String PROP_REPLICAS = "caravan:replicas";
  static final String PROP_REPLICATION_INTERVAL = "caravan:replication-interval";
  static final String PROP_REPLICA_NODES = "caravan:replica-nodes";

  static final String CONTEXT_FS_TYPE = "fsType";
  static final String CONTEXT_NODE = "node";
  static final String CONTEXT_DATASET = "dataset";

  /** Temporary snapshots taken to clone a volume from a volume; never listed as CSI snapshots. */
  static final String CLONE_SNAPSHOT_PREFIX = "clone-";

  /** Ids name their node, so that plugins on other nodes forward calls for them. */
  private static final IdScheme IDS = new IdScheme(LocalIds::volumeShape, LocalIds::snapshotShape,
      LocalIds::volumeLockKey, LocalIds::snapshotLockKey, LocalIds::volumeNode, LocalIds::snapshotNode);

  private final Zfs zfs;
  private final Pbkdf2Iters pbkdf2Iters;
  private final LocalConfig config;
  private final String nodeId;
  private final Topology nodeTopology;
  private final NodeUsage usage;
  private final LocalReplication replication;

  LocalController(Zfs zfs, LocalConfig config, String nodeId, NodeUsage usage, Pbkdf2Iters pbkdf2Iters) {
    this.zfs = zfs;
    this.pbkdf2Iters = pbkdf2Iters;
    this.config = config;
    this.nodeId = nodeId;
    this.nodeTopology = Topology.ofNode(nodeId);
    this.usage = usage;
    this.replication = new LocalReplication(zfs, this, config, Clock.systemUTC());
  }

  @Override
  public Optional<Replication> replication() {
    return Optional.of(replication);
  }

  @Override
  public Set<String> knownParameters() {
    return LocalParameters.KNOWN;
  }

  /** ZFS native encryption: every pool with the encryption feature can do it. */
  @Override
  public Optional<String> encryptionUnavailable() {
    return Optional.empty();
  }

  @Override
  public Set<String> knownSnapshotParameters() {
    return Set.of(LocalParameters.FREEZE);
  }

  @Override
  public IdScheme ids() {
    return IDS;
  }

  // ---- ids, ownership and scope ----------------------------------------------------------------

  /** Parses {@code id} and requires that this node owns it (UNAVAILABLE naming the owner otherwise). */
  VolumeId own(String field, String id) {
    VolumeId v = LocalIds.parseVolume(field, id);
    requireOwner(field, v.id(), v.node());
    return v;
  }

  private void requireOwner(String field, String id, String owner) {
    if (!owner.equals(nodeId)) {
      throw new CsiException(Kind.UNAVAILABLE,
          field + " " + id + " belongs to node " + owner + "; this plugin runs on node " + nodeId
              + " and cannot act on another node's zvols (this plugin has no peers: --peer-listen): send the call to"
              + " the plugin on node " + owner);
    }
  }

  /** Whether the volume's dataset is inside this node's managed area: an allowlisted pool's parent. */
  boolean inScope(VolumeId v) {
    return config.pools().contains(v.pool()) && v.parent().equals(config.parentDataset());
  }

  private void requireScope(String field, VolumeId v) {
    if (!inScope(v)) {
      throw CsiException.failedPrecondition(
          field + " " + v.id() + " is outside this node's managed datasets (" + config.parentDataset()
              + " in pools " + config.pools() + "): refusing to touch " + v.dataset());
    }
  }

  // ---- volumes ---------------------------------------------------------------------------------

  @Override
  public Provisioned provisionVolume(VolumeRequest req) {
    return guard(() -> create(req));
  }

  /** A resolved content source: the ZFS snapshot to copy (existing, or to be taken of a volume). */
  private record Source(ContentSource csi, VolumeId volume, Optional<String> snapshot, long size, long blockSize,
      boolean encrypted) {}

  private Provisioned create(VolumeRequest req) {
    LocalParameters params = LocalParameters.parse(req.parameters(), config);
    String fsType = fsType(req, params);
    if (!params.host().equals(LocalParameters.AUTO) && !params.host().equals(nodeId)) {
      throw new CsiException(Kind.UNAVAILABLE,
          "parameters.host names node " + params.host() + "; this plugin runs on node " + nodeId
              + " and, without peers (--peer-listen), can create zvols only here: send the call to the"
              + " plugin on node " + params.host() + " or use host=auto");
    }
    req.source().ifPresent(this::requireSourceOwner);
    params.replication().requireReplicable(nodeId, replication.attached());
    // A repeat first: a volume of this name here answers for itself, also to a requisite that
    // excludes this node (ALREADY_EXISTS, where a new volume would be sent elsewhere).
    Optional<VolumeInfo> existing = existingByName(req, params, fsType);
    requireTopology(req, params);
    if (existing.isPresent()) {
      // A crash after the copy but before the temporary snapshot went may have left it.
      req.source().ifPresent(s -> removeCloneSnapshot(s, req.name()));
      return new Provisioned(existing.get(), false);
    }
    Optional<Source> source = req.source().map(this::resolveSource);
    if (source.isPresent()) {
      requireEncryptionOfSource(source.get(), params, req);
    }
    String pool = params.pool()
        .orElse(source.map(s -> s.volume().pool()).filter(config.pools()::contains).orElse(config.defaultPool()));
    long block = params.blockSizeOrDefault();
    if (source.isPresent()) {
      long sourceBlock = source.get().blockSize();
      if (params.volblocksize().isPresent() && params.volblocksize().getAsLong() != sourceBlock) {
        throw CsiException.invalid(
            "parameters.volblocksize " + params.volblocksize().getAsLong() + " differs from the source's "
                + sourceBlock + ": a clone keeps its source's volblocksize (it is fixed at creation)");
      }
      block = sourceBlock;
    }
    long size = plannedSize(req, fsType, block, source.map(Source::size).orElse(0L));
    requireUsablePool(pool);
    requireSpace(pool, params.sparse() ? 0 : size);
    VolumeId v = LocalIds.volumeFor(nodeId, pool, config.parentDataset(), req.name());
    ZvolSpec spec = spec(v, req, params, fsType, size, block);
    if (source.isEmpty() && params.encrypted()) {
      zfs.createEncryptedZvol(spec, passphrase(req).bytes(), pbkdf2Iters);
      CrashPoints.reach("create.after-zvol");
      // Created with its key loaded: unloaded until NodeStageVolume loads it again.
      zfs.unloadKey(v.dataset());
    } else if (source.isEmpty()) {
      zfs.createZvol(spec);
      CrashPoints.reach("create.after-zvol");
    } else {
      cloneInto(source.get(), spec, req.name(), req);
    }
    return new Provisioned(info(v, zfs.properties(v.dataset())), true);
  }

  /** What a new volume records about its request, and how it is laid out. */
  private ZvolSpec spec(VolumeId v, VolumeRequest req, LocalParameters params, String fsType, long size, long block) {
    Map<String, String> props = new LinkedHashMap<>();
    props.put(PROP_NAME, req.name());
    props.put(PROP_FS_TYPE, fsType);
    props.put(PROP_NODE, nodeId);
    props.put(PROP_ACCESS, AccessType.contextValue(req.accessTypes()));
    req.source().ifPresent(s -> props.put(PROP_SOURCE, encode(s)));
    if (params.replication().on()) {
      props.put(PROP_REPLICAS, Integer.toString(params.replication().replicas()));
      props.put(PROP_REPLICATION_INTERVAL, params.replication().interval().toSeconds() + "s");
      props.put(PROP_REPLICA_NODES, String.join(",", params.replication().nodes()));
    }
    return new ZvolSpec(v.dataset(), size, OptionalLong.of(block), params.sparse(), params.compression(), props);
  }

  private void cloneInto(Source s, ZvolSpec spec, String name, VolumeRequest req) {
    if (s.snapshot().isPresent()) {
      copy(s.snapshot().get(), spec, req);
      return;
    }
    // Volume to volume: a temporary snapshot of the source, copied, then destroyed. A crash may leave
    // it behind; the retry reuses it (or, when the copy got that far, destroys it).
    String dataset = s.volume().dataset();
    String tmpName = CLONE_SNAPSHOT_PREFIX + IdRules.nameHash(name);
    String tmp = dataset + "@" + tmpName;
    if (!zfs.exists(tmp)) {
      snapshotMaybeFrozen(dataset, tmpName, Map.of(PROP_NAME, "clone of " + name), config.freezeOnSnapshot());
    }
    CrashPoints.reach("clone.after-temp-snapshot");
    try {
      copy(tmp, spec, req);
      CrashPoints.reach("clone.after-copy");
    } finally {
      removeCloneSnapshot(s.csi(), name);
    }
  }

  /** The facade's two copy steps, with the crash window between them named for the kill tests. */
  private void copy(String snapshot, ZvolSpec spec, VolumeRequest req) {
    zfs.receiveCopy(snapshot, spec);
    CrashPoints.reach("clone.after-receive");
    finishCopy(spec, req);
  }

  /**
   * The copy's last step. A copy of an encrypted source arrives encrypted, raw, with no key loaded;
   * ZFS grows an encrypted zvol only with its key loaded, so a copy larger than its source has it
   * loaded for the growth and unloaded after.
   */
  private void finishCopy(ZvolSpec spec, VolumeRequest req) {
    DatasetProperties copy = zfs.properties(spec.name());
    boolean grows = spec.size() > copy.volumeSize();
    if (!copy.isEncrypted() || !grows || copy.keyStatus() == KeyStatus.AVAILABLE) {
      zfs.finishCopy(spec);
      return;
    }
    try {
      zfs.loadKey(spec.name(), passphrase(req).bytes());
    } catch (WrongKeyException e) {
      throw Encryption.wrongPassphrase(spec.name());
    }
    try {
      zfs.finishCopy(spec);
    } finally {
      if (zfs.exists(spec.name())) {
        zfs.unloadKey(spec.name());
      }
    }
  }

  /** The passphrase CreateVolume was given: the services read it when {@code encryption=on}. */
  private static dev.caravan.csi.backend.Passphrase passphrase(VolumeRequest req) {
    return req.passphrase().orElseThrow(() -> new CsiException(Kind.UNAUTHENTICATED,
        "secrets." + Encryption.SECRET + " is required: CreateVolume of an encrypted volume needs its passphrase"));
  }

  /**
   * A clone of an encrypted source is encrypted under the source's passphrase (it is copied raw, still
   * encrypted), so it must ask for {@code encryption=on} and bring that passphrase; a plain source's
   * copy cannot be encrypted (INVALID_ARGUMENT: the source does not fit the parameters).
   */
  private void requireEncryptionOfSource(Source s, LocalParameters params, VolumeRequest req) {
    String field = s.csi().kind() == ContentSource.Kind.SNAPSHOT
        ? "volume_content_source.snapshot.snapshot_id" : "volume_content_source.volume.volume_id";
    if (s.encrypted() && !params.encrypted()) {
      throw CsiException.invalid(field + " " + s.csi().id() + " is encrypted, and a clone of it is encrypted with"
          + " the same passphrase: ask for parameters." + Encryption.PARAMETER + "=on with secrets."
          + Encryption.SECRET);
    }
    if (!s.encrypted() && params.encrypted()) {
      throw CsiException.invalid(field + " " + s.csi().id() + " is not encrypted, and a clone copies its blocks"
          + " as they are: parameters." + Encryption.PARAMETER + "=on cannot be honoured for it");
    }
    if (s.encrypted()) {
      String dataset = s.snapshot().orElse(s.volume().dataset());
      try {
        if (zfs.loadKey(dataset, passphrase(req).bytes())) {
          zfs.unloadKey(dataset); // loaded only to check it: the source is not staged
        }
      } catch (WrongKeyException e) {
        throw Encryption.wrongPassphrase(s.csi().id());
      }
    }
  }

  /** Destroys the temporary snapshot a clone of a volume takes, if it (still) exists. */
  private void removeCloneSnapshot(ContentSource source, String name) {
    if (source.kind() != ContentSource.Kind.VOLUME) {
      return;
    }
    String tmp = LocalIds.parseVolume("volume_content_source.volume.volume_id", source.id()).dataset()
        + "@" + CLONE_SNAPSHOT_PREFIX + IdRules.nameHash(name);
    try {
      if (zfs.exists(tmp)) {
        zfs.destroySnapshot(tmp);
      }
    } catch (StorageException e) {
      System.getLogger(LocalController.class.getName()).log(System.Logger.Level.WARNING,
          "could not destroy the temporary snapshot " + tmp + ": " + e.getMessage());
    }
  }

  /**
   * Finishes the clone a crash interrupted between its receive and its last step, when the retried
   * request is the one it was made for: the dataset's name derives from the CSI name, the received
   * marker proves Caravan made it, and the received properties record name, fs type and source.
   * Returns the finished volume's properties.
   */
  private DatasetProperties finishClone(VolumeRequest req, LocalParameters params, String fsType, VolumeId v,
      DatasetProperties p) {
    String where = "volume name '" + req.name() + "' already exists as " + v.dataset() + ", an unfinished clone";
    Optional<String> recorded = p.userProperty(PROP_NAME);
    if (recorded.isEmpty()) {
      throw CsiException.failedPrecondition(
          where + " without " + PROP_NAME + " (left by an older Caravan); check it and destroy it by hand"
              + " (zfs destroy -r " + v.dataset() + ") before retrying");
    }
    if (!recorded.get().equals(req.name())) {
      throw CsiException.internal(
          "volume id collision: " + v.dataset() + " belongs to name '" + recorded.get() + "'", null);
    }
    List<String> conflicts = originConflicts(v, p, req, params, fsType);
    accessConflict(p, req).ifPresent(conflicts::add);
    topologyConflict(req).ifPresent(conflicts::add);
    long block = p.volumeBlockSize();
    if (params.volblocksize().isPresent() && params.volblocksize().getAsLong() != block) {
      conflicts.add("volblocksize " + block + ", not " + params.volblocksize().getAsLong());
    }
    if (!conflicts.isEmpty()) {
      throw CsiException.alreadyExists(where + " (" + v.id() + ") for " + String.join("; ", conflicts));
    }
    long size = plannedSize(req, fsType, block, p.volumeSize());
    finishCopy(spec(v, req, params, fsType, size, block), req);
    return zfs.properties(v.dataset());
  }

  /** The volume the CO already created under {@code req.name()}, if any, checked for compatibility. */
  private Optional<VolumeInfo> existingByName(VolumeRequest req, LocalParameters params, String fsType) {
    for (String pool : config.pools()) {
      VolumeId v = LocalIds.volumeFor(nodeId, pool, config.parentDataset(), req.name());
      if (!zfs.exists(v.dataset())) {
        continue;
      }
      DatasetProperties p = zfs.properties(v.dataset());
      String where = "volume name '" + req.name() + "' already exists as " + v.dataset();
      if (zfs.isUnfinishedCopy(p)) {
        p = finishClone(req, params, fsType, v, p);
      }
      if (!zfs.marker().marks(p) || !p.isVolume() || p.isSnapshot()) {
        throw CsiException.alreadyExists(
            where + ", which Caravan did not create (no " + zfs.marker() + " or not a volume); it is left"
                + " untouched: remove or rename it by hand, or use another volume name");
      }
      Optional<String> recorded = p.userProperty(PROP_NAME);
      if (recorded.isEmpty()) {
        throw CsiException.alreadyExists(
            where + ", which carries no " + PROP_NAME + " (not made by CreateVolume); it is left untouched:"
                + " remove or rename it by hand, or use another volume name");
      }
      if (!recorded.get().equals(req.name())) {
        throw CsiException.internal(
            "volume id collision: " + v.dataset() + " belongs to name '" + recorded.get() + "'", null);
      }
      List<String> conflicts = originConflicts(v, p, req, params, fsType);
      if (!req.capacity().admits(p.volumeSize())) {
        conflicts.add(p.volumeSize() + " bytes, outside the requested capacity_range ["
            + req.capacity().requiredBytes() + ", "
            + (req.capacity().hasLimit() ? req.capacity().limitBytes() : "unbounded") + "]");
      }
      if (params.volblocksize().isPresent() && params.volblocksize().getAsLong() != p.volumeBlockSize()) {
        conflicts.add("volblocksize " + p.volumeBlockSize() + ", not " + params.volblocksize().getAsLong());
      }
      if (params.sparse() == p.isThick()) {
        conflicts.add(p.isThick() ? "thick, not sparse" : "sparse, not thick");
      }
      accessConflict(p, req).ifPresent(conflicts::add);
      topologyConflict(req).ifPresent(conflicts::add);
      if (p.isEncrypted() != params.encrypted()) {
        conflicts.add(p.isEncrypted() ? "encryption on, not off" : "encryption off, not on");
      }
      int replicas = Integer.parseInt(p.userProperty(PROP_REPLICAS).orElse("0"));
      if (replicas != params.replication().replicas()) {
        conflicts.add(replicas + " replica(s), not " + params.replication().replicas());
      }
      if (!conflicts.isEmpty()) {
        throw CsiException.alreadyExists(where + " (" + v.id() + ") with " + String.join("; ", conflicts));
      }
      if (p.keyStatus() == KeyStatus.AVAILABLE && usage.of(v.id()).isEmpty()) {
        // A create cut short between making the encrypted zvol and unloading its key.
        zfs.unloadKey(v.dataset());
      }
      return Optional.of(info(v, p));
    }
    return Optional.empty();
  }

  /**
   * How an existing zvol under the request's name differs from the request in where it was made: its
   * pool, its filesystem and its content source. Checked alike for a finished volume and for an
   * unfinished clone; the list is the caller's to add to.
   */
  private static List<String> originConflicts(VolumeId v, DatasetProperties p, VolumeRequest req,
      LocalParameters params, String fsType) {
    List<String> conflicts = new ArrayList<>();
    if (params.pool().isPresent() && !params.pool().get().equals(v.pool())) {
      conflicts.add("pool " + v.pool() + ", not " + params.pool().get());
    }
    String fs = p.userProperty(PROP_FS_TYPE).orElse("");
    if (!fs.equals(fsType)) {
      conflicts.add("fs type " + fs + ", not " + fsType);
    }
    Optional<ContentSource> source = p.userProperty(PROP_SOURCE).flatMap(LocalController::decode);
    if (!source.equals(req.source())) {
      conflicts.add("content source " + source.map(ContentSource::toString).orElse("none") + ", not "
          + req.source().map(ContentSource::toString).orElse("none"));
    }
    return conflicts;
  }

  /** Why a zvol made for some access types cannot serve a request for others, if it cannot. */
  private static Optional<String> accessConflict(DatasetProperties p, VolumeRequest req) {
    Set<AccessType> recorded = AccessType.fromContextValue(p.userProperty(PROP_ACCESS).orElse(""))
        .orElse(Set.of(AccessType.values()));
    return recorded.containsAll(req.accessTypes())
        ? Optional.empty()
        : Optional.of(AccessType.contextValue(recorded) + " access, not " + AccessType.contextValue(req.accessTypes()));
  }

  private Optional<String> topologyConflict(VolumeRequest req) {
    return req.requisite().isEmpty() || req.requisite().stream().anyMatch(nodeTopology::satisfies)
        ? Optional.empty()
        : Optional.of("node " + nodeId + ", which accessibility_requirements.requisite does not include");
  }

  private static String fsType(VolumeRequest req, LocalParameters params) {
    if (params.fsType().isPresent() && req.fsType().isPresent() && !params.fsType().get().equals(req.fsType().get())) {
      throw CsiException.invalid(
          "parameters.fsType (" + params.fsType().get() + ") contradicts volume_capabilities mount.fs_type ("
              + req.fsType().get() + ")");
    }
    return req.fsType().orElse(params.fsType().orElse("ext4"));
  }

  private void requireTopology(VolumeRequest req, LocalParameters params) {
    if (req.requisite().isEmpty() || req.requisite().stream().anyMatch(nodeTopology::satisfies)) {
      return;
    }
    List<String> nodes = req.requisite().stream()
        .map(t -> t.segments().getOrDefault(Topology.NODE_KEY, "?")).distinct().toList();
    if (params.host().equals(LocalParameters.AUTO)) {
      throw new CsiException(Kind.UNAVAILABLE,
          "accessibility_requirements.requisite allows only node(s) " + nodes + "; this plugin runs on node "
              + nodeId + " and, without peers (--peer-listen), can create zvols only here: send the call to"
              + " the plugin on one of those nodes");
    }
    throw new CsiException(Kind.RESOURCE_EXHAUSTED,
        "parameters.host=" + params.host() + " is not in accessibility_requirements.requisite " + nodes);
  }

  /** A clone's source must be on this node: checked before anything is looked up. */
  private void requireSourceOwner(ContentSource s) {
    switch (s.kind()) {
      case SNAPSHOT -> {
        SnapshotId sid = LocalIds.parseSnapshot("volume_content_source.snapshot.snapshot_id", s.id());
        requireOwner("volume_content_source.snapshot.snapshot_id", sid.id(), sid.volume().node());
      }
      case VOLUME -> own("volume_content_source.volume.volume_id", s.id());
    }
  }

  private Source resolveSource(ContentSource s) {
    return switch (s.kind()) {
      case SNAPSHOT -> {
        String field = "volume_content_source.snapshot.snapshot_id";
        SnapshotId sid = LocalIds.parseSnapshot(field, s.id());
        requireOwner(field, sid.id(), sid.volume().node());
        DatasetProperties p = (LocalIds.isReplica(sid) ? replicaSnapshot(sid) : managedSnapshot(sid))
            .orElseThrow(() -> CsiException.notFound(field + " " + s.id() + " does not exist"));
        yield new Source(s, sid.volume(), Optional.of(sid.snapshot()), p.volumeSize(), p.volumeBlockSize(),
            p.isEncrypted());
      }
      case VOLUME -> {
        String field = "volume_content_source.volume.volume_id";
        VolumeId vid = own(field, s.id());
        DatasetProperties p = managedVolume(vid)
            .orElseThrow(() -> CsiException.notFound(field + " " + s.id() + " does not exist"));
        yield new Source(s, vid, Optional.empty(), p.volumeSize(), p.volumeBlockSize(), p.isEncrypted());
      }
    };
  }

  private static long plannedSize(VolumeRequest req, String fsType, long block, long sourceSize) {
    CapacityRange range = req.capacity();
    long minimum = req.accessTypes().contains(AccessType.MOUNT) ? ("xfs".equals(fsType) ? MIN_XFS : MIN_EXT4) : block;
    long wanted = range.wanted(DEFAULT_SIZE, minimum, sourceSize);
    if (wanted > Long.MAX_VALUE - block) {
      throw CsiException.outOfRange("capacity_range.required_bytes " + wanted + " is too large");
    }
    long size = roundUp(wanted, block);
    if (range.hasLimit() && size > range.limitBytes()) {
      throw CsiException.outOfRange(
          "capacity_range.limit_bytes " + range.limitBytes() + " is below what this volume needs (" + size
              + " bytes: sizes round up to the volblocksize " + block + "; minimum " + minimum + " for "
              + (req.accessTypes().contains(AccessType.MOUNT) ? fsType : "block")
              + (sourceSize > 0 ? ", source size " + sourceSize : "") + ")");
    }
    return size;
  }

  private PoolStatus requireUsablePool(String pool) {
    PoolStatus status = zfs.pool(pool).orElseThrow(() -> new CsiException(Kind.UNAVAILABLE,
        "pool " + pool + " is not imported on node " + nodeId));
    if (!status.isUsable()) {
      throw new CsiException(Kind.UNAVAILABLE, "pool " + pool + " on node " + nodeId + " is " + status.health()
          + ": no new data can be written to it");
    }
    return status;
  }

  /** Space a new promise may take in {@code pool}: its root dataset's {@code available} less the reserve. */
  long free(String pool) {
    long available = zfs.properties(pool).get("available").filter(Property::numeric).map(Property::asLong).orElse(0L);
    return Math.max(0, available - config.reserveBytes());
  }

  private void requireSpace(String pool, long bytes) {
    if (bytes <= 0) {
      return;
    }
    long free = free(pool);
    if (bytes > free) {
      throw new CsiException(Kind.RESOURCE_EXHAUSTED,
          "a thick zvol of " + bytes + " bytes does not fit in pool " + pool + " on node " + nodeId + ": "
              + free + " bytes available after the reserve of " + config.reserveBytes()
              + " (local.reserve); use a smaller size, sparse=true or another pool");
    }
  }

  @Override
  public void deleteVolume(String volumeId) {
    ZfsErrorsToCsi.run(() -> {
      VolumeId v = own("volume_id", volumeId);
      requireScope("volume_id", v);
      Optional<DatasetProperties> found = find(v.dataset());
      if (found.isEmpty()) {
        return;
      }
      if (!zfs.marker().marks(found.get())) {
        throw CsiException.failedPrecondition(
            "volume_id " + volumeId + ": " + v.dataset() + " was not created by Caravan (no " + zfs.marker()
                + "); it is never modified or destroyed");
      }
      // The journal, and the kernel (for a mount or a bind of the zvol's node the journal does not
      // know of: made by hand, or by a plugin whose record is gone).
      usage.refuseDeleteInUse(volumeId, nodeId, deviceUse(v.dataset()));
      List<String> snapshots = zfs.snapshots(v.dataset()).stream()
          .filter(s -> !replication.isOwnSnapshot(v, s))
          .map(s -> describeSnapshot(v, s)).toList();
      if (!snapshots.isEmpty()) {
        throw CsiException.failedPrecondition(
            "volume_id " + volumeId + " has snapshots " + snapshots + ", which would not survive the deletion;"
                + " delete them first (DeleteSnapshot)");
      }
      // Replication's own snapshots go with the volume, one at a time (a crash between leaves the rest
      // for the retry), and the volume after them.
      replication.destroyAll(v);
      zfs.destroy(v.dataset());
      CrashPoints.reach("delete.after-destroy");
    });
  }

  private static String describeSnapshot(VolumeId v, String fullName) {
    String shortName = fullName.substring(fullName.indexOf('@') + 1);
    return LocalIds.SNAPSHOT_LEAF.matcher(shortName).matches()
        ? new SnapshotId(v, shortName).id()
        : fullName + (shortName.startsWith(CLONE_SNAPSHOT_PREFIX) ? " (left by an interrupted clone)" : "");
  }

  @Override
  public Optional<VolumeInfo> findVolume(String volumeId) {
    return guard(() -> {
      VolumeId v = own("volume_id", volumeId);
      return inScope(v) ? managedVolume(v).map(p -> info(v, p)) : Optional.empty();
    });
  }

  @Override
  public Optional<VolumeStatus> volumeStatus(String volumeId) {
    return guard(() -> {
      VolumeId v = own("volume_id", volumeId);
      if (!inScope(v)) {
        return Optional.empty();
      }
      return managedVolume(v).map(p -> {
        VolumeHealth health = poolHealth(v.pool());
        boolean inUse = usage.of(volumeId).isPresent() || deviceUse(v.dataset()).isPresent();
        List<String> attached = inUse ? List.of(nodeId) : List.of();
        return new VolumeStatus(info(v, p), health, attached);
      });
    });
  }

  /**
   * The pool's condition, as every volume in it shares it; when it is not ONLINE, with the command
   * that shows why (the claim-chain inspector's next step).
   */
  VolumeHealth poolHealth(String pool) {
    Optional<PoolStatus> status = zfs.pool(pool);
    if (status.isEmpty()) {
      return VolumeHealth.ofStorage("pool " + pool + " is not imported",
          "zpool import  # lists the pools that can be imported; then zpool import " + pool);
    }
    return switch (status.get().health()) {
      case ONLINE -> VolumeHealth.OK;
      // failmode=wait: every write to the pool waits, in the kernel, until its disks answer and the
      // operator clears the pool; nothing in the plugin can end that wait.
      case SUSPENDED -> VolumeHealth.ofStorage("pool " + pool + " is SUSPENDED",
          "zpool status -v " + pool + "  # fix the disk it names; once the disk answers: zpool clear " + pool);
      default -> VolumeHealth.ofStorage("pool " + pool + " is " + status.get().health(), "zpool status -v " + pool);
    };
  }

  @Override
  public List<VolumeInfo> listVolumes() {
    return guard(() -> {
      List<VolumeInfo> out = new ArrayList<>();
      for (VolumeId v : ownVolumes()) {
        managedVolume(v).ifPresent(p -> out.add(info(v, p)));
      }
      out.sort(Comparator.comparing(VolumeInfo::id));
      return out;
    });
  }

  /** Every zvol leaf under the parent dataset of each imported allowlisted pool. */
  List<VolumeId> ownVolumes() {
    List<VolumeId> out = new ArrayList<>();
    for (String pool : config.pools()) {
      String parent = config.parentIn(pool);
      if (zfs.pool(pool).isEmpty() || !zfs.exists(parent)) {
        continue;
      }
      for (String child : zfs.children(parent)) {
        String leaf = child.substring(parent.length() + 1);
        if (LocalIds.VOLUME_LEAF.matcher(leaf).matches()) {
          out.add(new VolumeId(nodeId, pool, config.parentDataset(), leaf));
        }
      }
    }
    return out;
  }

  // ---- snapshots -------------------------------------------------------------------------------

  @Override
  public SnapshotInfo createSnapshot(String sourceVolumeId, String name, Map<String, String> parameters) {
    return guard(() -> {
      boolean freeze = LocalParameters.freeze(parameters, config.freezeOnSnapshot());
      VolumeId v = own("source_volume_id", sourceVolumeId);
      requireScope("source_volume_id", v);
      Optional<SnapshotInfo> existing = snapshotByName(name);
      if (existing.isPresent()) {
        if (!existing.get().sourceVolumeId().equals(sourceVolumeId)) {
          throw CsiException.alreadyExists(
              "name '" + name + "' already exists as snapshot " + existing.get().id() + " of volume "
                  + existing.get().sourceVolumeId() + ", not of source_volume_id " + sourceVolumeId);
        }
        return existing.get();
      }
      if (managedVolume(v).isEmpty()) {
        throw CsiException.notFound("source_volume_id " + sourceVolumeId + " does not exist");
      }
      // A snapshot is a sync task: on a suspended pool it would wait in the kernel, holding this
      // call's thread, until the pool is back. Refused instead, as create and expand are.
      requireUsablePool(v.pool());
      SnapshotId sid = new SnapshotId(v, LocalIds.snapshotNameFor(v, name));
      snapshotMaybeFrozen(v.dataset(), sid.name(), Map.of(PROP_NAME, name), freeze);
      CrashPoints.reach("snapshot.after-zfs-snapshot");
      return snapshotInfo(sid, zfs.properties(sid.snapshot()));
    });
  }

  void snapshotMaybeFrozen(String dataset, String shortName, Map<String, String> props, boolean freeze) {
    Optional<Path> mounted = freeze ? mountPointOf(dataset) : Optional.empty();
    if (mounted.isPresent()) {
      // Staged here: FIFREEZE flushes and blocks writers, so the snapshot holds every acknowledged
      // write and a clean filesystem; whileFrozen thaws however the snapshot ends.
      Filesystems.whileFrozen(mounted.get(), () -> zfs.snapshot(dataset, shortName, props));
    } else {
      zfs.snapshot(dataset, shortName, props);
    }
  }

  /** The snapshot the CO calls {@code name}, wherever it is on this node. */
  private Optional<SnapshotInfo> snapshotByName(String name) {
    String hash = IdRules.nameHash(name);
    for (VolumeId v : ownVolumes()) {
      for (String full : snapshotsOf(v)) {
        String shortName = full.substring(full.indexOf('@') + 1);
        if (!shortName.endsWith(hash)) {
          continue;
        }
        SnapshotId sid = new SnapshotId(v, shortName);
        Optional<DatasetProperties> p = managedSnapshot(sid);
        if (p.isPresent() && p.get().userProperty(PROP_NAME).orElse("").equals(name)) {
          return Optional.of(snapshotInfo(sid, p.get()));
        }
      }
    }
    return Optional.empty();
  }

  private List<String> snapshotsOf(VolumeId v) {
    try {
      return zfs.snapshots(v.dataset()).stream()
          .filter(s -> LocalIds.SNAPSHOT_LEAF.matcher(s.substring(s.indexOf('@') + 1)).matches())
          .toList();
    } catch (ZfsException e) {
      if ("ENOENT".equals(e.errnoName())) {
        return List.of(); // deleted meanwhile
      }
      throw e;
    }
  }

  @Override
  public void deleteSnapshot(String snapshotId) {
    ZfsErrorsToCsi.run(() -> {
      SnapshotId sid = LocalIds.parseSnapshot("snapshot_id", snapshotId);
      requireOwner("snapshot_id", snapshotId, sid.volume().node());
      requireScope("snapshot_id", sid.volume());
      if (LocalIds.isReplica(sid)) {
        throw CsiException.failedPrecondition("snapshot_id " + snapshotId + " is a replica's snapshot: replication"
            + " keeps it up to date, and it goes when its volume is deleted (DeleteVolume)");
      }
      Optional<DatasetProperties> found = find(sid.snapshot());
      if (found.isEmpty()) {
        return;
      }
      if (!zfs.marker().marks(found.get())) {
        throw CsiException.failedPrecondition(
            "snapshot_id " + snapshotId + ": " + sid.snapshot() + " was not created by Caravan (no "
                + zfs.marker() + "); it is never destroyed");
      }
      zfs.destroySnapshot(sid.snapshot());
    });
  }

  @Override
  public Optional<SnapshotInfo> findSnapshot(String snapshotId) {
    return guard(() -> {
      SnapshotId sid = LocalIds.parseSnapshot("snapshot_id", snapshotId);
      requireOwner("snapshot_id", snapshotId, sid.volume().node());
      if (!inScope(sid.volume())) {
        return Optional.empty();
      }
      if (LocalIds.isReplica(sid)) {
        return replicaSnapshot(sid).map(p -> replicaSnapshotInfo(sid, p));
      }
      return managedSnapshot(sid).map(p -> snapshotInfo(sid, p));
    });
  }

  @Override
  public List<SnapshotInfo> listSnapshots() {
    return guard(() -> {
      List<SnapshotInfo> out = new ArrayList<>();
      for (VolumeId v : ownVolumes()) {
        for (String full : snapshotsOf(v)) {
          SnapshotId sid = new SnapshotId(v, full.substring(full.indexOf('@') + 1));
          managedSnapshot(sid).ifPresent(p -> out.add(snapshotInfo(sid, p)));
        }
      }
      out.addAll(newestReplicaSnapshots());
      out.sort(Comparator.comparing(SnapshotInfo::id));
      return out;
    });
  }

  /**
   * The newest snapshot of each replica this node holds, as a snapshot of the replicated volume (its
   * source volume id the volume's, its id this node's): what a restore after the owner's loss starts
   * from.
   */
  private List<SnapshotInfo> newestReplicaSnapshots() {
    Map<String, SnapshotInfo> out = new TreeMap<>();
    for (String pool : config.pools()) {
      String parent = config.parentIn(pool);
      if (zfs.pool(pool).isEmpty() || !zfs.exists(parent)) {
        continue;
      }
      for (String child : zfs.children(parent)) {
        String leaf = child.substring(parent.length() + 1);
        if (!LocalIds.REPLICA_LEAF.matcher(leaf).matches()) {
          continue;
        }
        List<String> snapshots = zfs.snapshots(child).stream()
            .filter(n -> LocalIds.REPLICATION_SNAPSHOT.matcher(n.substring(n.indexOf('@') + 1)).matches()).toList();
        if (snapshots.isEmpty()) {
          continue;
        }
        String newest = snapshots.getLast();
        SnapshotId sid = new SnapshotId(new VolumeId(nodeId, pool, config.parentDataset(), leaf),
            newest.substring(newest.indexOf('@') + 1));
        replicaSnapshot(sid).ifPresent(p -> {
          SnapshotInfo info = replicaSnapshotInfo(sid, p);
          // A refresh's old copy waits beside the new one until it is destroyed: the newer one is the copy.
          out.merge(info.sourceVolumeId(), info, (a, b) -> taken(a).compareTo(taken(b)) >= 0 ? a : b);
        });
      }
    }
    return new ArrayList<>(out.values());
  }

  /** When a replica snapshot was taken, from the name in its id. */
  private static Instant taken(SnapshotInfo s) {
    return Replication.pointTime(s.id().substring(s.id().lastIndexOf('@') + 1)).orElse(Instant.EPOCH);
  }

  /** A replica's snapshot, when its dataset is a replica (it carries the volume id it is of, and no marker). */
  private Optional<DatasetProperties> replicaSnapshot(SnapshotId sid) {
    Optional<DatasetProperties> replica = find(sid.volume().dataset())
        .filter(p -> !zfs.marker().marks(p) && p.userProperty(LocalReplication.PROP_REPLICA_OF).isPresent());
    return replica.isEmpty() ? Optional.empty() : find(sid.snapshot()).filter(DatasetProperties::isSnapshot);
  }

  private SnapshotInfo replicaSnapshotInfo(SnapshotId sid, DatasetProperties p) {
    String of = zfs.properties(sid.volume().dataset()).userProperty(LocalReplication.PROP_REPLICA_OF).orElse("");
    long size = p.get("volsize").filter(Property::numeric).map(Property::asLong).orElse(0L);
    Instant created = p.get("creation").filter(Property::numeric).map(c -> Instant.ofEpochSecond(c.asLong()))
        .orElse(Instant.EPOCH);
    return new SnapshotInfo(sid.id(), "", of, size, created, true);
  }

  private SnapshotInfo snapshotInfo(SnapshotId sid, DatasetProperties p) {
    long size = p.get("volsize").filter(Property::numeric).map(Property::asLong).orElse(0L);
    Instant created = p.get("creation").filter(Property::numeric).map(c -> Instant.ofEpochSecond(c.asLong()))
        .orElse(Instant.EPOCH);
    return new SnapshotInfo(sid.id(), p.userProperty(PROP_NAME).orElse(""), sid.volume().id(), size, created, true);
  }

  // ---- expansion and capacity ------------------------------------------------------------------

  @Override
  public ExpandResult expandVolume(String volumeId, CapacityRange range, AccessType accessType) {
    return guard(() -> {
      VolumeId v = own("volume_id", volumeId);
      requireScope("volume_id", v);
      DatasetProperties p = managedVolume(v)
          .orElseThrow(() -> CsiException.notFound("volume_id " + volumeId + " does not exist"));
      boolean nodeExpansion = accessType != AccessType.BLOCK;
      long size = p.volumeSize();
      long block = p.volumeBlockSize();
      if (range.hasLimit() && range.limitBytes() < size) {
        throw CsiException.outOfRange(
            "capacity_range.limit_bytes " + range.limitBytes() + " is below the volume's current size " + size
                + "; zvols only grow");
      }
      if (range.requiredBytes() > Long.MAX_VALUE - block) {
        throw CsiException.outOfRange("capacity_range.required_bytes " + range.requiredBytes() + " is too large");
      }
      long target = roundUp(range.requiredBytes(), block);
      if (target <= size) {
        return new ExpandResult(size, nodeExpansion);
      }
      if (range.hasLimit() && target > range.limitBytes()) {
        throw CsiException.outOfRange(
            "capacity_range.limit_bytes " + range.limitBytes() + " is below " + target + " (required_bytes "
                + range.requiredBytes() + " rounded up to the volblocksize " + block + ")");
      }
      if (p.isEncrypted() && p.keyStatus() != KeyStatus.AVAILABLE) {
        throw CsiException.failedPrecondition("volume_id " + volumeId + " is encrypted and not staged on this node:"
            + " ZFS grows an encrypted zvol only while its key is loaded; stage the volume (NodeStageVolume loads"
            + " the key), then expand it");
      }
      requireUsablePool(v.pool());
      requireSpace(v.pool(), p.isThick() ? target - size : 0);
      zfs.growZvol(v.dataset(), target);
      return new ExpandResult(target, nodeExpansion);
    });
  }

  @Override
  public CapacityReport capacity(Map<String, String> parameters) {
    return guard(() -> {
      LocalParameters params = LocalParameters.parse(parameters, config);
      if (!params.host().equals(LocalParameters.AUTO) && !params.host().equals(nodeId)) {
        throw new CsiException(Kind.UNAVAILABLE,
            "parameters.host names node " + params.host() + "; this plugin runs on node " + nodeId
                + " and knows only its own pools: ask the plugin on node " + params.host());
      }
      String pool = params.pool().orElse(config.defaultPool());
      long minimum = params.fsType().map(f -> f.equals("xfs") ? MIN_XFS : MIN_EXT4).orElse(params.blockSizeOrDefault());
      Optional<PoolStatus> status = zfs.pool(pool);
      long free = status.isPresent() && status.get().isUsable() ? free(pool) : 0;
      long max = free - free % params.blockSizeOrDefault();
      return new CapacityReport(free, max, minimum);
    });
  }

  // ---- helpers ---------------------------------------------------------------------------------

  /**
   * The dataset's properties, or empty when it does not exist. On an imported pool that is not
   * usable (its I/O suspended) ZFS answers that a dataset it can no longer read does not exist:
   * absence is then unknown, not a fact, and a NOT_FOUND (or a DeleteVolume's OK) would be false, so
   * it is UNAVAILABLE naming the pool.
   */
  Optional<DatasetProperties> find(String dataset) {
    Optional<DatasetProperties> found = lookUp(dataset);
    if (found.isEmpty()) {
      int slash = dataset.indexOf('/');
      String pool = slash < 0 ? dataset : dataset.substring(0, slash);
      Optional<PoolStatus> status = zfs.pool(pool);
      if (status.isPresent() && !status.get().isUsable()) {
        throw new CsiException(Kind.UNAVAILABLE, "pool " + pool + " on node " + nodeId + " is "
            + status.get().health() + ": cannot tell whether " + dataset + " exists until it is back");
      }
    }
    return found;
  }

  private Optional<DatasetProperties> lookUp(String dataset) {
    if (!zfs.exists(dataset)) {
      return Optional.empty();
    }
    try {
      return Optional.of(zfs.properties(dataset));
    } catch (ZfsException e) {
      if ("ENOENT".equals(e.errnoName())) {
        return Optional.empty();
      }
      throw e;
    }
  }

  /** The volume's properties if it exists, is a zvol, carries the marker and a CSI name. */
  Optional<DatasetProperties> managedVolume(VolumeId v) {
    return find(v.dataset())
        .filter(p -> p.isVolume() && !p.isSnapshot() && zfs.marker().marks(p) && p.userProperty(PROP_NAME).isPresent());
  }

  private Optional<DatasetProperties> managedSnapshot(SnapshotId sid) {
    return find(sid.snapshot())
        .filter(p -> p.isSnapshot() && zfs.marker().marks(p) && p.userProperty(PROP_NAME).isPresent());
  }

  VolumeInfo info(VolumeId v, DatasetProperties p) {
    Map<String, String> context = new TreeMap<>(Map.of(
        CONTEXT_FS_TYPE, p.userProperty(PROP_FS_TYPE).orElse("ext4"),
        CONTEXT_NODE, nodeId,
        CONTEXT_DATASET, v.dataset()));
    p.userProperty(PROP_ACCESS).ifPresent(access -> context.put(AccessType.CONTEXT_KEY, access));
    if (p.isEncrypted()) {
      context.put(Encryption.PARAMETER, Encryption.Mode.ON.value()); // that it is, never how: no key material
    }
    return new VolumeInfo(v.id(), p.userProperty(PROP_NAME).orElse(""), p.volumeSize(), context.get(CONTEXT_FS_TYPE), context,
        p.userProperty(PROP_SOURCE).flatMap(LocalController::decode), List.of(nodeTopology));
  }

  /** What uses the zvol's block device on this node ({@link DeviceUse}); empty when nothing does. */
  private Optional<DeviceUse> deviceUse(String dataset) {
    Path device;
    try {
      device = zfs.zvolDevice(dataset, Duration.ZERO);
    } catch (StorageException e) {
      return Optional.empty(); // no device node (yet, or volmode=none): nothing can use it
    }
    return Optional.of(DeviceUse.of(device)).filter(DeviceUse::inUse);
  }

  /** Where the zvol's block device is mounted on this node (the staging mount), if it is. */
  Optional<Path> mountPointOf(String dataset) {
    String majorMinor;
    try {
      Path device = zfs.zvolDevice(dataset, Duration.ZERO);
      majorMinor = BlockDevices.majorMinor(device);
    } catch (StorageException e) {
      return Optional.empty(); // no device node (yet, or volmode=none): nothing can be mounted from it
    }
    return MountTable.read().stream()
        .filter(e -> e.majorMinor().equals(majorMinor) && e.root().equals("/"))
        .map(MountEntry::mountPoint)
        .findFirst();
  }

  static String encode(ContentSource s) {
    return s.kind().name().toLowerCase(Locale.ROOT) + ":" + s.id();
  }

  static Optional<ContentSource> decode(String value) {
    int colon = value.indexOf(':');
    if (colon < 0) {
      return Optional.empty();
    }
    String id = value.substring(colon + 1);
    return switch (value.substring(0, colon)) {
      case "snapshot" -> Optional.of(ContentSource.snapshot(id));
      case "volume" -> Optional.of(ContentSource.volume(id));
      default -> Optional.empty();
    };
  }

  static long roundUp(long value, long unit) {
    return ((value + unit - 1) / unit) * unit;
  }
}
