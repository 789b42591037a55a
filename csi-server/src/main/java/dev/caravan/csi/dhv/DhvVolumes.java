package dev.caravan.csi.dhv;

import dev.caravan.csi.backend.KeyCosts;
import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.Backend;
import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.drivers.Backends;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Encryption;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.IdShape;
import dev.caravan.csi.backend.Passphrase;
import dev.caravan.csi.backend.Provisioned;
import dev.caravan.csi.backend.VolumeInfo;
import dev.caravan.csi.backend.VolumeRef;
import dev.caravan.csi.backend.VolumeRequest;
import dev.caravan.csi.backend.VolumeStatus;
import dev.caravan.csi.dhv.DhvRecord.Creation;
import dev.caravan.csi.node.AccessMode;
import dev.caravan.csi.node.AllowedRoots;
import dev.caravan.csi.node.NodeEngine;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.node.StagedVolume;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.mount.MountTable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.function.Supplier;

/**
 * The DHV operations on one volume, as one short-lived process runs them, on top of the same layers
 * the CSI plugin uses: the backend's controller provisions, grows and destroys the storage (with its
 * crash-safety rules and its refusal to delete what is attached), and the {@link NodeEngine} attaches,
 * formats only an empty device, grows and mounts, keeping its journal on the host. The caller holds
 * the volume's lock ({@link DhvStore#lock}).
 *
 * <p>Every path is derived from {@code DHV_VOLUME_ID} and {@code DHV_NODE_ID}: the volume is mounted
 * at {@code DHV_VOLUMES_DIR/<volume id>} and {@code DHV_CREATED_PATH} is never used.
 *
 * <p>Network storage (a backend whose controller {@link ControllerBackend#publishes publishes}: qnap)
 * differs in two ways. Its volume is found on the storage by the name derived from the volume id
 * when this node holds no record of it (create ran on another node), so publish, unpublish and
 * delete work on any node. And the storage's own fence decides who holds it: before attaching, the
 * volume is published to this node's storage identity (its iSCSI initiator name), which the storage
 * refuses while another node's identity holds it; unpublish removes this node's identity again.
 */
final class DhvVolumes implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(DhvVolumes.class.getName());

  private final Mode mode;
  private final DhvRequest req;
  private final DhvStore store;
  private final Backend backend;
  private final ControllerBackend controller;
  private final NodeEngine engine;
  private final Supplier<String> storageNode;
  private final Optional<Path> passphraseFile;

  private DhvVolumes(Mode mode, DhvRequest req, DhvStore store, Backend backend, NodeEngine engine,
      Supplier<String> storageNode, Optional<Path> passphraseFile) {
    this.passphraseFile = passphraseFile;
    this.mode = mode;
    this.req = req;
    this.store = store;
    this.backend = backend;
    this.controller = backend.controller();
    this.engine = engine;
    this.storageNode = storageNode;
  }

  /**
   * Opens the backend and this volume's node journal; call with the volume's lock held.
   *
   * @param storageNode this node's identity on network storage (qnap: its iSCSI initiator name), read
   *     only when the backend publishes
   * @param passphraseFile where encrypted volumes' passphrase is ({@link PassphraseFile}), if the plugin
   *     was installed with one
   */
  static DhvVolumes open(String driver, Mode mode, Path dataDir, Map<String, String> options, DhvRequest req,
      DhvStore store, Supplier<String> storageNode, Optional<Path> passphraseFile, KeyCosts keyCosts) {
    if (driver.equals("qnap")) {
      List<String> chap = options.keySet().stream().filter(k -> k.contains("chap")).sorted().toList();
      if (!chap.isEmpty()) {
        throw DhvException.invalid("backend option(s) " + chap + " are not supported by the DHV plugin: a DHV"
            + " operation receives no secrets to take the CHAP credentials from; the target's ACL (this node's"
            + " initiator name) is the fence");
      }
    }
    NodeJournal journal = NodeJournal.open(store.journalDir(req.nodeId(), req.volumeId()));
    Backend backend =
        Backends.open(driver, new BackendConfig(req.nodeId(), dataDir, options, journal.usage(), keyCosts));
    return new DhvVolumes(mode, req, store, backend, new NodeEngine(backend.node(), journal), storageNode,
        passphraseFile);
  }

  Set<String> knownParameters() {
    return controller.knownParameters();
  }

  private DhvParameters parameters(Map<String, String> given) {
    return DhvParameters.parse(given, knownParameters(), passphraseFile.isPresent());
  }

  /** What a CO would send as an encrypted volume's secrets: the passphrase file's, read now. */
  private Map<String, String> secrets(DhvParameters params) {
    return params.encrypted() ? PassphraseFile.secrets(passphraseFile.orElseThrow()) : Map.of();
  }

  // ---- create ----------------------------------------------------------------------------------

  /**
   * Immediate mode: provisions (or finds, or grows) the volume and makes it mounted here; the same
   * call at agent start puts back what a reboot took down. Deferred mode: provisions or grows only
   * (and grows the filesystem too where this node has the volume published).
   */
  Map<String, Object> create() {
    DhvParameters params = parameters(req.parameters());
    Optional<DhvRecord> before = store.read(req.volumeId());
    DhvRecord base = before.orElseGet(() -> DhvRecord.of(req));
    // The intent, synced before anything is provisioned: what a delete needs to find and finish a
    // create cut short, and what the undo below trusts, never the mere absence of a record (a data
    // directory lost or restored from a backup has none for a volume full of data).
    Creation intent = Creation.begun(UUID.randomUUID().toString(), onStorage(base.backendName()).isPresent());
    store.write(base.withCreation(intent));
    try {
      return createRecorded(before, base.withCreation(intent), intent, params);
    } catch (RuntimeException e) {
      undoFailedCreate(before, intent.call(), e);
      throw e;
    }
  }

  private Map<String, Object> createRecorded(Optional<DhvRecord> before, DhvRecord base, Creation intent,
      DhvParameters params) {
    // An update's request is recorded only once the backend has accepted it.
    DhvRecord asked = before.isPresent() ? base.withRequest(req) : base;
    Provisioned p = createOrFind(asked, params);
    VolumeInfo info = p.volume();
    if (asked.backendVolumeId().isPresent() && !asked.backendVolumeId().get().equals(info.id())) {
      throw DhvException.failed("volume " + req.volumeId() + " is recorded as backend volume "
          + asked.backendVolumeId().get() + " but the backend answered " + info.id() + "; not touching either");
    }
    Creation answered = intent.answered(p.made());
    DhvRecord found = base.withBackendVolumeId(info.id()).withCreation(answered);
    store.write(found); // the backend's answer, before anything else can fail
    info = growAsAsked(asked, info);
    DhvRecord rec = asked.withBackendVolumeId(info.id()).withCreation(answered);
    if (!rec.equals(found)) {
      store.write(rec);
    }
    Map<String, Object> out = new LinkedHashMap<>();
    if (mode == Mode.IMMEDIATE) {
      mount(info, AccessMode.SINGLE_NODE_WRITER, false, params);
      out.put("path", req.mountPath().toString());
    } else if (rec.publishedOn().equals(Optional.of(req.nodeId()))) {
      growWherePublished(info, params);
    }
    out.put("bytes", info.capacityBytes());
    return out;
  }

  /**
   * Nomad neither calls delete after a failed create nor ever names this volume id again (a new
   * {@code nomad volume create} gets a new id), so a create that fails removes the backend volume it
   * made itself: storage no allocation has seen, holding nothing but a fresh filesystem. What it made
   * is read from its own intent in the record: a volume that existed before the call, or that the
   * backend reports it found, is never removed (it may hold data; the record keeps naming it, and a
   * retry mounts it). A create cut short by SIGKILL cannot undo anything; its leftovers are found by
   * the record and removed by a delete of the id.
   */
  private void undoFailedCreate(Optional<DhvRecord> before, String call, RuntimeException cause) {
    try {
      Optional<DhvRecord> rec = store.read(req.volumeId());
      Optional<Creation> mine = rec.flatMap(DhvRecord::creation).filter(c -> c.call().equals(call));
      boolean ours = mine.isPresent() && !mine.get().backendExisted() && !mine.get().made().equals(Optional.of(false));
      if (!ours) {
        LOG.log(System.Logger.Level.INFO, "volume " + req.volumeId() + ": the create failed; its backend volume"
            + " was not made by this call, so it is left as it is (a retry uses it, a delete of the id removes it)");
        return;
      }
      Optional<String> made = mine.get().made().isPresent()
          ? rec.flatMap(DhvRecord::backendVolumeId)
          // The backend's create failed part-way: what is under the name now, this call began.
          : onStorage(rec.get().backendName()).map(VolumeInfo::id);
      made.ifPresent(backendId -> {
        engine.unstage(backendId, canonicalMountPath());
        if (mode == Mode.IMMEDIATE) {
          unfence(backendId);
        }
        controller.deleteVolume(backendId);
      });
      removeMountDirectory();
      if (before.isPresent()) {
        store.write(before.get());
      } else {
        store.removeJournalDir(req.nodeId(), req.volumeId());
        store.remove(req.volumeId());
      }
      LOG.log(System.Logger.Level.INFO, "volume " + req.volumeId() + ": the create failed; removed what it had"
          + " made");
    } catch (RuntimeException undo) {
      cause.addSuppressed(undo);
      LOG.log(System.Logger.Level.WARNING, "volume " + req.volumeId() + ": could not remove what the failed create"
          + " made (a delete of this volume id finishes it): " + undo.getMessage());
    }
  }

  /**
   * The backend's volume under {@code backendName}, found by the lock key the backend derives from
   * that name alone (every backend's ids carry it; names as the backend lists them need not match).
   */
  private Optional<VolumeInfo> onStorage(String backendName) {
    String key = controller.volumeLockKey(backendName);
    return controller.listVolumes().stream()
        .filter(v -> controller.volumeId(v.id()) instanceof IdShape.Ours o && o.lockKey().equals(key))
        .findFirst();
  }

  /**
   * Creates the backend volume for the record's request, or finds it; grows it when the request asks
   * for more than it has. Backend names derive from the UUID, so the backend's own idempotency makes a
   * retry after a crash find the half-made volume and finish it.
   */
  private VolumeInfo provision(DhvRecord rec, DhvParameters params) {
    return growAsAsked(rec, createOrFind(rec, params).volume());
  }

  private Provisioned createOrFind(DhvRecord rec, DhvParameters params) {
    try {
      return provisionVolume(rec, rec.capacity(), params);
    } catch (CsiException e) {
      if (e.kind() != CsiException.Kind.ALREADY_EXISTS) {
        throw e;
      }
      // It exists with a size outside the asked range (an update that grows it): take it as it is;
      // anything else incompatible (another fsType) is refused again here, with the backend's words.
      return provisionVolume(rec, CapacityRange.UNSPECIFIED, params);
    }
  }

  /** Grows the backend volume when the record's request asks for more than it has. */
  private VolumeInfo growAsAsked(DhvRecord rec, VolumeInfo info) {
    if (rec.capacityMin() <= info.capacityBytes()) {
      return info;
    }
    controller.expandVolume(info.id(), rec.capacity(), AccessType.MOUNT);
    String id = info.id();
    VolumeInfo grown = controller.findVolume(id)
        .orElseThrow(() -> DhvException.failed("backend volume " + id + " vanished while it was grown"));
    LOG.log(System.Logger.Level.INFO, "volume " + req.volumeId() + ": grown to " + grown.capacityBytes() + " bytes");
    return grown;
  }

  /** The backend's CreateVolume; an encrypted volume's with its passphrase, zeroed after the call. */
  private Provisioned provisionVolume(DhvRecord rec, CapacityRange range, DhvParameters params) {
    if (!params.encrypted()) {
      return controller.provisionVolume(new VolumeRequest(rec.backendName(), range, Set.of(AccessType.MOUNT),
          Optional.empty(), params.backend(), Optional.empty(), List.of(), List.of()));
    }
    controller.encryptionUnavailable().ifPresent(why -> {
      throw DhvException.invalid("parameter " + Encryption.PARAMETER + "=on cannot be honoured: " + why);
    });
    try (Passphrase key = Encryption.passphrase("create", secrets(params))) {
      return controller.provisionVolume(new VolumeRequest(rec.backendName(), range, Set.of(AccessType.MOUNT),
          Optional.empty(), params.backend(), Optional.empty(), List.of(), List.of(), Optional.of(key)));
    }
  }

  // ---- delete ----------------------------------------------------------------------------------

  /**
   * Unmounts, detaches and destroys the volume, idempotently. Refuses (deferred mode) while a node has
   * it published. Only the directory {@code DHV_VOLUMES_DIR/<volume id>} is removed, and only when it
   * is empty and nothing is mounted there.
   */
  Map<String, Object> delete() {
    Path derived = req.mountPath();
    req.createdPath().filter(p -> !p.isEmpty() && !p.equals(derived.toString())).ifPresent(p -> LOG.log(System.Logger.Level.INFO,
        "volume " + req.volumeId() + ": DHV_CREATED_PATH is " + p + ", not the volume's own " + derived
            + " (Nomad's delete after a failed create passes its volumes directory); it is ignored"));
    Optional<DhvRecord> found = store.read(req.volumeId()).or(this::recordFromStorage);
    if (found.isEmpty()) {
      LOG.log(System.Logger.Level.INFO, "volume " + req.volumeId() + ": nothing to delete");
      store.removeJournalDir(req.nodeId(), req.volumeId());
      return Map.of();
    }
    DhvRecord rec = found.get();
    if (rec.publishedOn().isPresent()) {
      throw DhvException.failed("volume " + req.volumeId() + " is published on node " + rec.publishedOn().get()
          + "; a volume in use is never deleted: unpublish it there first");
    }
    Optional<String> backendId = rec.backendVolumeId().or(() -> finishCreateForDelete(rec));
    if (backendId.isPresent()) {
      engine.unstage(backendId.get(), canonicalMountPath());
      if (mode == Mode.IMMEDIATE) {
        unfence(backendId.get());
      } else if (controller.publishes()) {
        requireNotPublished(backendId.get());
      }
      controller.deleteVolume(backendId.get());
    }
    removeMountDirectory();
    store.removeJournalDir(req.nodeId(), req.volumeId());
    store.remove(req.volumeId());
    LOG.log(System.Logger.Level.INFO, "volume " + req.volumeId() + " ('" + rec.name() + "'): deleted");
    return Map.of();
  }

  /**
   * A create cut short before it recorded the backend volume: the backend may hold a half-made one.
   * Finishing the create (same name, same request) is the only generic way to learn its id; a request
   * the backend refuses up front left nothing behind.
   */
  private Optional<String> finishCreateForDelete(DhvRecord rec) {
    try {
      return Optional.of(provision(rec, parameters(rec.parameters())).id());
    } catch (CsiException e) {
      if (List.of(CsiException.Kind.INVALID_ARGUMENT, CsiException.Kind.OUT_OF_RANGE,
          CsiException.Kind.RESOURCE_EXHAUSTED).contains(e.kind())) {
        return Optional.empty();
      }
      throw e;
    }
  }

  // ---- deferred: publish / unpublish -----------------------------------------------------------

  /**
   * Binds the volume to this node: claims it (refusing while another node holds it), attaches,
   * formats if empty, grows and mounts at {@code DHV_VOLUMES_DIR/<volume id>}.
   */
  Map<String, Object> publish() {
    Optional<DhvRecord> local = store.read(req.volumeId()).filter(r -> r.backendVolumeId().isPresent());
    DhvRecord rec = local.or(this::recordFromStorage)
        .orElseThrow(() -> DhvException.failed("volume " + req.volumeId() + " has not been created (or its create"
            + " did not finish); run create first"));
    Optional<String> holder = rec.publishedOn();
    if (holder.isPresent() && !holder.get().equals(req.nodeId())) {
      throw new DhvException(DhvException.HELD_ELSEWHERE, "volume " + req.volumeId() + " is published on node "
          + holder.get() + "; it has a single writer, so node " + req.nodeId() + " cannot publish it until node "
          + holder.get() + " unpublishes it");
    }
    String backendId = rec.backendVolumeId().get();
    if (controller.publishes()) {
      requireNotHeldElsewhere(backendId);
    }
    if (holder.isEmpty()) {
      store.write(rec.withPublishedOn(Optional.of(req.nodeId()))); // the claim first: a crash leaves it held here
    }
    boolean admitted = false;
    try {
      VolumeInfo info = controller.findVolume(backendId)
          .orElseThrow(() -> DhvException.failed("backend volume " + backendId + " of volume " + req.volumeId()
              + " does not exist"));
      admitted = controller.publishes() && fence(backendId);
      mount(info, accessMode(req.accessMode()), req.readOnly(),
          parameters(rec.parameters()));
      Map<String, Object> out = new LinkedHashMap<>();
      out.put("path", req.mountPath().toString());
      out.put("bytes", info.capacityBytes());
      return out;
    } catch (RuntimeException e) {
      if (holder.isEmpty() && engine.journal().get(backendId).isEmpty()) {
        // The engine undid its stage; nothing holds the volume here, so the storage's fence is lifted too.
        try {
          if (admitted) {
            unfence(backendId);
          }
          if (local.isPresent()) {
            store.write(rec);
          } else {
            store.remove(req.volumeId());
          }
        } catch (RuntimeException undo) {
          e.addSuppressed(undo);
        }
      }
      throw e;
    }
  }

  /**
   * Unmounts and detaches the volume on this node and releases this node's claim (on network storage:
   * removes this node's identity from the fence); idempotent.
   */
  Map<String, Object> unpublish() {
    Optional<DhvRecord> found = store.read(req.volumeId());
    Optional<String> backendId = backendId(found);
    if (backendId.isPresent()) {
      boolean journaled = engine.journal().get(backendId.get()).isPresent();
      engine.unstage(backendId.get(), canonicalMountPath());
      if (controller.publishes()) {
        unfenceOnceUnusedHere(backendId.get(), journaled);
      }
    }
    removeMountDirectory();
    store.removeJournalDir(req.nodeId(), req.volumeId());
    if (found.isEmpty()) {
      return Map.of();
    }
    DhvRecord rec = found.get();
    if (rec.publishedOn().equals(Optional.of(req.nodeId()))) {
      store.write(rec.withPublishedOn(Optional.empty()));
    } else {
      rec.publishedOn().ifPresent(n -> LOG.log(System.Logger.Level.INFO, "volume " + req.volumeId()
          + " is published on node " + n + ", not here; only this node's mount was checked"));
    }
    return Map.of();
  }

  /**
   * Run by an operator, never by Nomad: removes a lost node's identity from the volume's fence on
   * network storage, so that another node can publish it; the CSI path's {@code nomad volume detach}.
   * The holder is named, and must be the one the storage admits, so a release never takes a volume
   * from a node the operator did not mean; this node's own identity is refused (its unpublish unmounts
   * first). Idempotent: a volume that nobody holds, or that no longer exists, is left as it is.
   */
  Map<String, Object> release(String initiator) {
    if (!controller.publishes()) {
      throw DhvException.invalid("release exists only for network storage (caravan-qnap-deferred), whose fence"
          + " another node can lift; this backend's volumes live on the node that holds them");
    }
    if (initiator.isBlank() || !initiator.chars().allMatch(c -> c > 0x20 && c < 0x7f)) {
      throw DhvException.invalid("DHV_RELEASE_INITIATOR '" + IdRules.printable(initiator)
          + "' must name the iSCSI initiator to release (the one a refused publish names)");
    }
    if (initiator.equals(storageNode())) {
      throw DhvException.invalid("DHV_RELEASE_INITIATOR " + initiator + " is this node's own initiator; run"
          + " unpublish here instead, which unmounts and logs out before it lifts the fence");
    }
    Optional<String> backendId = backendId(store.read(req.volumeId()));
    if (backendId.isEmpty()) {
      LOG.log(System.Logger.Level.INFO, "volume " + req.volumeId() + " does not exist on the storage; nothing to"
          + " release");
      return Map.of();
    }
    List<String> holders = holders(backendId.get());
    if (holders.isEmpty()) {
      LOG.log(System.Logger.Level.INFO, "volume " + req.volumeId() + ": no node holds it; nothing to release");
      return Map.of();
    }
    if (!holders.contains(initiator)) {
      throw DhvException.failed("volume " + req.volumeId() + " is held by the node with initiator "
          + String.join(", ", holders) + ", not " + initiator + "; nothing was released");
    }
    LOG.log(System.Logger.Level.WARNING, "volume " + req.volumeId() + ": releasing it from the node with initiator "
        + initiator + " at the operator's request; that node can no longer reach it, and writes it had not"
        + " yet flushed to the storage never get there");
    controller.unpublishVolume(backendId.get(), Optional.of(initiator));
    return Map.of("released", initiator);
  }

  // ---- network storage: finding the volume, the fence ----------------------------------------------

  /**
   * Network storage only: the volume as the storage holds it, for a node that holds no record of it
   * (create ran elsewhere). Found by the lock key of the name create gave it, which the backend
   * derives from that name alone; a record made up from this request, not yet written.
   */
  private Optional<DhvRecord> recordFromStorage() {
    if (!controller.publishes()) {
      return Optional.empty();
    }
    DhvRecord fresh = DhvRecord.of(req);
    return onStorage(fresh.backendName()).map(v -> fresh.withBackendVolumeId(v.id()));
  }

  /** The backend volume of this node's record, or else the one the storage holds under this volume's name. */
  private Optional<String> backendId(Optional<DhvRecord> local) {
    return local.flatMap(DhvRecord::backendVolumeId).or(() -> recordFromStorage().flatMap(DhvRecord::backendVolumeId));
  }

  /** The node identities the storage's fence admits to the volume (none for a volume it does not hold). */
  private List<String> holders(String backendId) {
    return controller.volumeStatus(backendId).map(VolumeStatus::attachedNodes).orElse(List.of());
  }

  /** This node's identity on the storage: what its fence admits. */
  private String storageNode() {
    return storageNode.get();
  }

  /** Refuses, naming them, while the storage's fence admits other nodes than this one. */
  private void requireNotHeldElsewhere(String backendId) {
    String self = storageNode();
    List<String> others = holders(backendId).stream().filter(n -> !n.equals(self)).toList();
    if (!others.isEmpty()) {
      throw new DhvException(DhvException.HELD_ELSEWHERE, "volume " + req.volumeId() + " is published on the node"
          + " with initiator " + String.join(", ", others) + " (the storage's ACL admits only that node); it has a"
          + " single writer, so node " + req.nodeId() + " (initiator " + self + ") cannot publish it until that"
          + " node unpublishes it");
    }
  }

  /**
   * Network storage: publishes the volume to this node's identity (the storage refuses while another
   * holds it); returns whether this call admitted it. Other backends have no fence: false.
   */
  private boolean fence(String backendId) {
    if (!controller.publishes()) {
      return false;
    }
    requireNotHeldElsewhere(backendId);
    boolean before = holders(backendId).contains(storageNode());
    controller.publishVolume(backendId, storageNode(), Map.of()); // re-checks: another node may have won since
    return !before;
  }

  /**
   * Deferred mode on network storage: refuses, naming them, while the storage's fence admits any node
   * (only an unpublish on that node releases it; the backend would refuse the delete too, in CSI's words).
   */
  private void requireNotPublished(String backendId) {
    List<String> holders = holders(backendId);
    if (!holders.isEmpty()) {
      throw DhvException.failed("volume " + req.volumeId() + " is published on the node with initiator "
          + String.join(", ", holders) + " (the storage's ACL admits it); a volume in use is never deleted:"
          + " unpublish it there first");
    }
  }

  /**
   * Network storage: lifts this node's fence only once this node has proved the volume unused here,
   * from the host's own state: nothing mounted at the volume's path, and nothing using its device
   * (the node backend reads mounts, bind mounts of the device node and holders). The node journal
   * cannot be trusted to say so: a journal lost or restored from before the publish has no record of
   * a filesystem that is still mounted, and lifting the fence then would let a second node mount it.
   * Without a journal record, an idle attachment (an unused multipath map, sessions) is detached here
   * first, as the journal's unstage would have. Refuses, naming what still uses it, otherwise.
   */
  private void unfenceOnceUnusedHere(String backendId, boolean journaled) {
    Optional<VolumeInfo> info = controller.findVolume(backendId);
    if (info.isPresent()) {
      VolumeRef ref = new VolumeRef(info.get().id(), info.get().context());
      List<String> users = new ArrayList<>();
      Path path = canonicalMountPath();
      MountTable.stackedAt(MountTable.read(), path)
          .forEach(m -> users.add(m.source() + " mounted at " + m.mountPoint()));
      users.addAll(backend.node().usersHere(ref));
      if (!users.isEmpty()) {
        throw DhvException.failed("volume " + req.volumeId() + " is still in use on node " + req.nodeId() + " ("
            + String.join("; ", users) + ") and this node's journal does not account for it, so the storage's fence"
            + " keeps admitting this node and no other node can publish it: unmount it, then run unpublish again");
      }
      if (!journaled) {
        backend.node().detach(ref);
      }
    }
    unfence(backendId);
  }

  /** Network storage: removes this node's identity from the volume's fence (idempotent). */
  private void unfence(String backendId) {
    if (controller.publishes()) {
      controller.unpublishVolume(backendId, Optional.of(storageNode()));
    }
  }

  // ---- the node side ---------------------------------------------------------------------------

  private void mount(VolumeInfo info, AccessMode accessMode, boolean readOnly, DhvParameters params) {
    if (Files.isSymbolicLink(req.mountPath())) {
      throw DhvException.failed(req.mountPath() + " is a symbolic link; a volume is mounted only on a directory"
          + " the plugin made");
    }
    Path path = canonicalMountPath();
    if (mode == Mode.IMMEDIATE) {
      fence(info.id()); // deferred: publish did, before its claim was recorded
    }
    List<String> flags = readOnly && !accessMode.readOnly() ? List.of("ro") : List.of();
    NodeEngine.StageSpec spec = new NodeEngine.StageSpec(new VolumeRef(info.id(), info.context(), secrets(params)),
        path, AccessType.MOUNT, info.fsType(), flags, accessMode);
    engine.stage(spec);
    if (!spec.mode().readOnly() && !flags.contains("ro")) {
      growIfNeeded(spec);
      params.applyTo(path);
    }
  }

  /** Deferred mode: a create that grew a volume published here grows its filesystem too (if mounted writable). */
  private void growWherePublished(VolumeInfo info, DhvParameters params) {
    Path path = canonicalMountPath();
    engine.journal().get(info.id()).flatMap(v -> v.staging(path)).ifPresent(staging -> {
      AccessMode m = staging.mode().orElse(AccessMode.SINGLE_NODE_WRITER);
      if (!m.readOnly() && !staging.mountFlags().contains("ro")) {
        growIfNeeded(new NodeEngine.StageSpec(new VolumeRef(info.id(), info.context(), secrets(params)), path,
            AccessType.MOUNT,
            info.fsType(), staging.mountFlags(), m));
      }
    });
  }

  /**
   * Grows the mounted filesystem when it is smaller than its device: the volume grew since the
   * filesystem was last grown (an update, or a grow a crash cut short). The superblock is read
   * first, so a create with nothing to grow starts no tool. Online first; an ext4 that cannot grow
   * online (the agent lacks CAP_SYS_RESOURCE, as in many containers) and is mounted nowhere else is
   * unmounted, grown unmounted and mounted again by the node engine (Nomad refuses an update while an
   * allocation claims the volume, and an unmount of a busy filesystem fails rather than hides it).
   */
  private void growIfNeeded(NodeEngine.StageSpec spec) {
    String backendId = spec.volume().volumeId();
    Path path = spec.stagingPath();
    Optional<StagedVolume> staged = engine.journal().get(backendId);
    if (staged.isEmpty() || staged.get().device().isEmpty()) {
      return;
    }
    StagedVolume v = staged.get();
    Map<String, String> secrets = spec.volume().secrets();
    backend.node().refresh(new VolumeRef(backendId, v.ref().context(), secrets));
    Path device = v.device().get();
    FsType fs = FsType.parse(v.fsType()).orElseThrow();
    long fsBytes = Filesystems.size(device, fs);
    long deviceBytes = BlockDevices.size(device);
    if (fsBytes >= deviceBytes) {
      return;
    }
    try {
      engine.expand(backendId, path, Optional.empty(), Optional.empty(), secrets);
    } catch (RuntimeException online) {
      if (fs != FsType.EXT4 || !mountedOnlyAt(device, path)) {
        throw online;
      }
      LOG.log(System.Logger.Level.INFO, "volume " + req.volumeId() + ": growing the filesystem unmounted, since"
          + " online it failed: " + online.getMessage());
      engine.unstage(backendId, path);
      engine.stage(spec);
    }
    LOG.log(System.Logger.Level.INFO, "volume " + req.volumeId() + ": filesystem grown from " + fsBytes + " to "
        + deviceBytes + " bytes");
  }

  private static boolean mountedOnlyAt(Path device, Path path) {
    String majorMinor = BlockDevices.majorMinor(device);
    return MountTable.read().stream().filter(m -> m.majorMinor().equals(majorMinor))
        .allMatch(m -> m.mountPoint().equals(path));
  }

  private Path canonicalMountPath() {
    return AllowedRoots.canonical(req.mountPath());
  }

  /** Removes {@code DHV_VOLUMES_DIR/<volume id>} if it is an empty directory with nothing mounted on it. */
  private void removeMountDirectory() {
    Path dir = req.mountPath();
    if (!Files.isDirectory(dir, LinkOption.NOFOLLOW_LINKS) || MountTable.isMountPoint(dir)) {
      return;
    }
    try {
      Files.deleteIfExists(dir);
    } catch (DirectoryNotEmptyException e) {
      LOG.log(System.Logger.Level.WARNING, "leaving " + dir + " in place: nothing is mounted there but it is not"
          + " empty (files written while the volume was not mounted are not the plugin's to remove)");
    } catch (IOException e) {
      throw new UncheckedIOException("cannot remove " + dir, e);
    }
  }

  private static AccessMode accessMode(String nomad) {
    return switch (nomad) {
      case DhvRequest.READER -> AccessMode.SINGLE_NODE_READER_ONLY;
      case DhvRequest.SINGLE_WRITER -> AccessMode.SINGLE_NODE_SINGLE_WRITER;
      case DhvRequest.MULTI_WRITER -> AccessMode.SINGLE_NODE_MULTI_WRITER;
      default -> AccessMode.SINGLE_NODE_WRITER;
    };
  }

  @Override
  public void close() {
    backend.close();
  }
}
