package dev.caravan.csi.observe.inspect;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.Backend;
import dev.caravan.csi.backend.BackendObject;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.VolumeHealth;
import dev.caravan.csi.backend.VolumeRef;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.node.StagedVolume;
import dev.caravan.csi.node.StagedVolume.Published;
import dev.caravan.csi.support.Json;
import dev.caravan.csi.observe.nomad.NomadPaths;
import dev.caravan.csi.observe.nomad.NomadPaths.NomadVolume;
import dev.caravan.csi.observe.nomad.NomadClient;
import dev.caravan.csi.observe.stats.UsageCollector;
import dev.caravan.csi.observe.stats.VolumeUsage;
import dev.caravan.csi.peer.v1.NodeLayersAnswer;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.fs.FsStats;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * The claim-chain inspector: for one volume, what this plugin can see at every layer (backend
 * object, attachment, staging mounts, publish mounts, the node journal on disk and in memory), each
 * with its state and evidence, and every disagreement as a {@link Finding}. It only reads: the
 * mount table, sysfs, the journal file, the backend's {@link Backend#describe} and the volume's health
 * (the storage's own condition under this node's device: a pool, multipath paths), each waited for
 * within a bound ({@link StorageReads}) so that it answers while the storage is stuck, and when the
 * plugin runs as a Nomad task, Nomad's HTTP API ({@link NomadLayer}). It never changes anything.
 */
public final class ChainInspector {
  /** Mount option keys whose values are never shown (network filesystems put credentials there). */
  private static final Pattern SECRET_OPTION =
      Pattern.compile("(?i)(pass|secret|token|key|cred|auth|user(name)?)[^=]*");

  private final String nodeId;
  private final Backend backend;
  private final NodeJournal journal;
  private final UsageCollector usage;
  private final Clock clock;
  private final Optional<NomadLayer> nomad;
  private volatile Optional<PeerNodes> peers = Optional.empty();
  private volatile Optional<Replicas> replicas = Optional.empty();
  private final StorageReads reads = new StorageReads();

  public ChainInspector(String nodeId, Backend backend, NodeJournal journal, UsageCollector usage, Clock clock) {
    this(nodeId, backend, journal, usage, clock, Optional.empty());
  }

  /** With {@code nomad}, Nomad's HTTP API is a layer of the chain too. */
  public ChainInspector(String nodeId, Backend backend, NodeJournal journal, UsageCollector usage, Clock clock,
      Optional<NomadClient> nomad) {
    this.nodeId = nodeId;
    this.backend = backend;
    this.journal = journal;
    this.usage = usage;
    this.clock = clock;
    this.nomad = nomad.map(n -> new NomadLayer(n, nodeId));
  }

  /**
   * With {@code p}, the chain has a {@code peer_nodes} layer: the other nodes it points at (the owner,
   * the storage's holders, the nodes of Nomad's claims), asked for their own layers. Set once, after the
   * peer endpoint (which serves {@link #ownLayers}) starts.
   */
  public void askPeers(PeerNodes p) {
    peers = Optional.of(p);
  }

  /**
   * With {@code r}, the chain has a {@code replication} layer for a volume this node replicates or
   * holds a copy of ({@link ReplicaLayer}). Set once, with the peer channel that carries the copies.
   */
  public void seeReplicas(Replicas r) {
    replicas = Optional.of(r);
  }

  /** The whole chain of one volume; the id has passed the backend's syntax check. */
  public Chain inspect(String volumeId) {
    return inspect(volumeId, Optional.empty());
  }

  /**
   * The whole chain of one volume; {@code nomadVolume} is the Nomad volume the caller resolved it
   * from, if any (otherwise the journal's staging paths name it).
   */
  public Chain inspect(String volumeId, Optional<NomadVolume> nomadVolume) {
    return look(volumeId, nomadVolume, false).chain();
  }

  /**
   * This node's own node-side layers of a volume, for another node's inspector: attachment, mounts and
   * journal, with what still holds the volume here; neither Nomad nor the other nodes are asked.
   */
  public NodeLayersAnswer ownLayers(String volumeId) {
    Seen seen = look(volumeId, Optional.empty(), true);
    Map<String, Object> layers = new LinkedHashMap<>(seen.chain().layers());
    layers.remove("backend");
    layers.remove("nomad");
    return NodeLayersAnswer.newBuilder().setNode(nodeId).addAllHolds(seen.holds())
        .addAllAllocations(seen.allocations()).setLayersJson(Json.write(layers)).build();
  }

  /** A chain, and what on this node holds the volume (for {@link #ownLayers}). */
  private record Seen(Chain chain, List<String> holds, List<String> allocations) {}

  private Seen look(String volumeId, Optional<NomadVolume> nomadVolume, boolean forPeer) {
    List<MountEntry> mounts = MountTable.read();
    List<Finding> findings = new ArrayList<>();
    Optional<StagedVolume> memory = journal.get(volumeId);
    Optional<StagedVolume> readBack;
    String diskError = null;
    try {
      readBack = journal.readFromDisk(volumeId);
    } catch (RuntimeException e) {
      readBack = Optional.empty();
      diskError = e.getMessage();
    }
    Optional<StagedVolume> disk = readBack;
    Optional<StagedVolume> record = memory.or(() -> disk);
    // The storage may not answer (an appliance away or late, a pool whose I/O is suspended, a stalled
    // disk, or a node-only instance that has none): the other layers are still this node's to show,
    // and nothing is concluded from a silence. Its two reads run side by side, each bounded, since a
    // stuck storage is when an operator inspects; a peer's answer has to come within its caller's
    // deadline, so it waits for them half as long as that.
    Duration bound = forPeer ? PeerNodes.DEADLINE.dividedBy(2) : StorageReads.BOUND;
    long deadline = System.nanoTime() + bound.toNanos();
    CompletableFuture<BackendObject> describing = reads.start("describe " + volumeId, () -> backend.describe(volumeId));
    // The condition of the storage under this node's device (the pool, the paths), as stats report it.
    Optional<CompletableFuture<VolumeHealth>> checking = record
        .filter(r -> r.device().isPresent())
        .map(r -> reads.start("health " + volumeId,
            () -> backend.node().health(new VolumeRef(volumeId, r.context()), r.device())));
    Optional<CompletableFuture<Replicas.View>> replicating = replicas.map(r -> reads.start("replicas " + volumeId,
        () -> r.of(volumeId)));
    StorageReads.Answer<BackendObject> described = StorageReads.await(describing, deadline);
    Optional<StorageReads.Answer<VolumeHealth>> checked = checking.map(c -> StorageReads.await(c, deadline));
    String waited = bound.toSeconds() + " s";
    BackendObject object;
    Optional<String> backendError = Optional.empty();
    Optional<CsiException> backendRefusal = Optional.empty();
    if (described.value().isPresent()) {
      object = described.value().get();
    } else {
      if (described.error().isPresent()) {
        if (!(described.error().get() instanceof CsiException c)) {
          throw described.error().get();
        }
        backendRefusal = Optional.of(c);
        backendError = Optional.of(c.getMessage());
      } else {
        backendError = Optional.of("the storage did not answer within " + waited);
      }
      object = new BackendObject(backend.driver(), Optional.empty(), false, Map.of(), List.of(), Optional.empty());
    }
    List<String> holds = new ArrayList<>();
    if (record.isPresent()) {
      holds.add("journal record " + journal.file(volumeId));
    }

    // ---- journal ----
    Map<String, Object> journalEvidence = new LinkedHashMap<>();
    journalEvidence.put("file", journal.file(volumeId).toString());
    journalEvidence.put("in_memory", memory.map(ChainInspector::recordJson));
    journalEvidence.put("on_disk", disk.map(ChainInspector::recordJson));
    if (diskError != null) {
      journalEvidence.put("read_error", diskError);
    }
    String journalState;
    if (memory.isPresent() && disk.isEmpty()) {
      journalState = "missing-on-disk";
      findings.add(Finding.error("journal-record-missing",
          "The plugin has volume " + volumeId + " in memory as staged, but its journal record "
              + journal.file(volumeId) + " is gone from disk. After a plugin restart it would forget this"
              + " volume and leave its mounts and device behind.",
          "ls -l " + journal.dir() + "  # find out who removed the record; to repair, unpublish and unstage"
              + " through Nomad (nomad alloc stop <alloc>) while this plugin is still running"));
    } else if (memory.isEmpty() && disk.isPresent()) {
      journalState = "on-disk-only";
      findings.add(Finding.warning("journal-not-loaded",
          "A journal record for " + volumeId + " appeared on disk after the plugin started; the plugin does"
              + " not act on it until it restarts.",
          "cat " + journal.file(volumeId)));
    } else if (memory.isPresent() && !memory.equals(disk)) {
      journalState = "differs";
      findings.add(Finding.warning("journal-differs",
          "The journal record on disk differs from the plugin's in-memory copy for " + volumeId + ".",
          "cat " + journal.file(volumeId)));
    } else {
      journalState = memory.isPresent() ? "ok" : "absent";
    }
    List<NodeJournal.Unreadable> unreadable = journal.unreadable(volumeId);
    if (!unreadable.isEmpty()) {
      journalEvidence.put("unreadable", unreadable.stream().map(ChainInspector::unreadableJson).toList());
      if (memory.isEmpty()) {
        journalState = "unreadable";
      }
    }
    for (NodeJournal.Unreadable u : unreadable) {
      findings.add(unreadableFinding(u));
      if (!u.stale()) {
        holds.add("unreadable journal record " + u.file());
      }
    }

    // ---- backend object ----
    Map<String, Object> backendEvidence = new LinkedHashMap<>();
    backendEvidence.put("kind", object.kind());
    backendEvidence.put("location", object.location());
    backendEvidence.put("exists", object.exists());
    backendEvidence.put("properties", object.properties());
    backendEvidence.put("snapshots", object.snapshots());
    backendEvidence.put("attached_device", object.attachedDevice().map(Path::toString));
    if (backendError.isPresent()) {
      backendEvidence.put("error", backendError.get());
    }
    boolean backendKnown = backendError.isEmpty();
    String backendState = !backendKnown ? "unknown" : object.exists() ? "ok" : "missing";
    Optional<VolumeHealth> health = checked.flatMap(StorageReads.Answer::value);
    Optional<String> healthNext = health.filter(VolumeHealth::abnormal).flatMap(VolumeHealth::next);
    if (healthNext.isPresent()) {
      findings.add(Finding.error("storage-abnormal",
          "The storage under " + volumeId + " on this node reports a fault of its own: " + health.get().message()
              + ". Until it is fixed, I/O to the volume can wait or fail (a pool with failmode=wait or a multipath"
              + " map with no path up holds it); the node's own layers do not show this.",
          healthNext.get()));
    }
    List<String> late = new ArrayList<>();
    if (described.late()) {
      late.add("the backend's evidence");
    }
    if (checked.map(StorageReads.Answer::late).orElse(false)) {
      late.add("the volume's health");
    }
    // A fault the storage names (above) explains its silence too: one cause, one finding.
    if (!late.isEmpty() && healthNext.isEmpty()) {
      findings.add(Finding.warning("storage-not-answering",
          "The storage did not answer the inspector's read of " + String.join(" and ", late) + " for " + volumeId
              + " within " + waited + ": a pool whose I/O waits, a stalled disk or a late appliance. What it holds"
              + " is unknown, not absent; calls that need it wait, and end at their deadline, until it answers.",
          backend.storageCheck()));
    } else if (backendRefusal.filter(c -> c.kind() == CsiException.Kind.UNAVAILABLE).isPresent()
        && healthNext.isEmpty()) {
      findings.add(Finding.warning("storage-unavailable",
          "The storage answered no read of " + volumeId + ": " + backendRefusal.get().getMessage() + ". What it"
              + " holds is unknown, not absent; calls that need it answer UNAVAILABLE until it answers again.",
          backend.storageCheck()));
    }
    String fenceOpen = object.properties().get(BackendObject.FENCE_OPEN);
    if (fenceOpen != null) {
      findings.add(Finding.error("fence-open",
          "The storage does not keep other nodes away from " + volumeId + ": " + fenceOpen + ". A node that"
              + " Nomad has detached the volume from, but that still reaches the storage, can go on writing it"
              + " while the next node does.",
          backend.storageCheck()));
    }
    if (backendKnown && !object.exists() && record.isPresent()) {
      findings.add(Finding.error("backend-object-missing",
          "The journal says " + volumeId + " is staged here, but its backing " + object.kind() + " "
              + object.location().orElse("object") + " does not exist.",
          "ls -l " + object.location().orElse(journal.dir().toString())
              + "  # then stop the allocations using the volume (nomad volume status <volume>)"));
    }
    // A volume id that names another node as its owner lives in that node's storage (file, local): its
    // absence from this node's storage is expected, not a deletion behind Nomad's back.
    boolean ownedElsewhere = peers.flatMap(p -> p.owner(volumeId)).filter(o -> !o.equals(nodeId)).isPresent();
    if (backendKnown && !object.exists() && nomadVolume.isPresent() && !ownedElsewhere) {
      NomadVolume n = nomadVolume.get();
      String status = "nomad volume status -namespace " + n.namespace() + " " + n.volumeId();
      findings.add(Finding.error("nomad-volume-not-in-storage",
          "Nomad has volume " + n.volumeId() + " (namespace " + n.namespace() + ") registered with external id "
              + volumeId + ", but the storage has no such " + object.kind()
              + object.location().map(l -> " (" + l + ")").orElse("")
              + ": it was deleted behind Nomad's back, or registered with a wrong external id.",
          status + "  # if the volume is gone for good: nomad volume deregister -namespace " + n.namespace() + " "
              + n.volumeId() + "; if its external id is wrong: deregister it and register it again with the"
              + " right one"));
    }
    if (!object.exists() && object.attachedDevice().isPresent()) {
      findings.add(Finding.error("device-for-deleted-volume",
          "Device " + object.attachedDevice().get() + " is still attached for " + volumeId + ", whose backing "
              + object.kind() + " has been deleted.",
          "findmnt --source " + object.attachedDevice().get() + "  # if nothing uses it: losetup -d "
              + object.attachedDevice().get()));
    }

    // ---- attachment ----
    Optional<Path> recordedDevice = record.flatMap(StagedVolume::device);
    Optional<Path> device = recordedDevice.or(object::attachedDevice);
    Map<String, Object> attachEvidence = new LinkedHashMap<>();
    attachEvidence.put("recorded_device", recordedDevice.map(Path::toString));
    attachEvidence.put("backend_sees", object.attachedDevice().map(Path::toString));
    Optional<String> majorMinor = Optional.empty();
    String attachState;
    if (device.isEmpty()) {
      attachState = "absent";
    } else {
      Path d = device.get();
      boolean present = Files.exists(d);
      attachEvidence.put("device", d.toString());
      attachEvidence.put("device_exists", present);
      if (present) {
        try {
          majorMinor = Optional.of(BlockDevices.majorMinor(d));
          attachEvidence.put("major_minor", majorMinor.get());
          // From sysfs, never by opening the device: an open can wait on a device whose storage is stuck.
          readSys(Path.of("/sys/dev/block", majorMinor.get(), "size"))
              .ifPresent(sectors -> attachEvidence.put("size_bytes", Long.parseLong(sectors) * 512));
        } catch (RuntimeException e) {
          attachEvidence.put("error", e.getMessage());
        }
      }
      checked.ifPresent(h -> attachEvidence.put("storage_health", h.value().map(VolumeHealth::message)
          .or(() -> h.error().map(e -> "unread: " + e.getMessage())).orElse("did not answer within " + waited)));
      Path sys = Path.of("/sys/class/block").resolve(d.getFileName().toString());
      attachEvidence.put("holders", listNames(sys.resolve("holders")));
      readSys(sys.resolve("loop/backing_file")).ifPresent(b -> attachEvidence.put("loop_backing_file", b));
      String mm = majorMinor.orElse("");
      attachEvidence.put("mounted_at", mounts.stream().filter(m -> m.majorMinor().equals(mm))
          .map(m -> m.mountPoint().toString()).toList());
      boolean backendAgrees = object.attachedDevice().map(b -> sameDevice(d, b)).orElse(false);
      attachState = present && backendAgrees ? "ok" : "detached";
      if (!backendKnown) {
        attachState = present ? "unverified" : "detached";
      } else if (recordedDevice.isPresent() && !backendAgrees) {
        findings.add(Finding.error("device-detached",
            "The journal records " + d + " as the device of " + volumeId + ", but "
                + (object.attachedDevice().isPresent()
                    ? "the backend finds it attached as " + object.attachedDevice().get()
                    : "no device is attached for it any more" + (present ? " (" + d + " now maps something else"
                        + readSys(sys.resolve("loop/backing_file")).map(b -> ": " + b).orElse(" or nothing") + ")" : ""))
                + ". Its mounts can no longer reach the data reliably.",
            // losetup only for a loop device: a multipath map (qnap) or a zvol is not one
            (d.getFileName().toString().startsWith("loop") ? "losetup --list | grep " + volumeId + "; " : "")
                + "findmnt --source " + d
                + "  # then restart the allocations so Nomad unstages and stages the volume again"));
      }
      if (record.isEmpty() && object.attachedDevice().isPresent()) {
        findings.add(Finding.warning("device-without-record",
            "Device " + d + " is attached for " + volumeId + " but this node's journal has no record of the volume:"
                + " the plugin will never detach it by itself.",
            "findmnt --source " + d + "  # if nothing uses it: losetup -d " + d));
      }
    }

    // ---- staging mounts ----
    List<Map<String, Object>> staging = new ArrayList<>();
    Set<Path> recordedPaths = record.map(r -> {
      Set<Path> paths = new java.util.HashSet<>(r.stagingPaths());
      r.targets().forEach(t -> paths.add(t.target()));
      return paths;
    }).orElse(Set.of());
    Optional<VolumeUsage> figures = usage.get(volumeId);
    for (Path p : record.map(StagedVolume::stagingPaths).orElse(List.of())) {
      Map<String, Object> s = new LinkedHashMap<>();
      s.put("path", p.toString());
      NomadPaths.fromStagingPath(p).ifPresent(n -> {
        s.put("nomad_namespace", n.namespace());
        s.put("nomad_volume_id", n.volumeId());
      });
      Optional<MountEntry> m = mountAt(mounts, p);
      s.put("mount", m.map(ChainInspector::mountJson));
      m.ifPresent(e -> holds.add("staging mount " + p));
      boolean block = record.get().accessType() == AccessType.BLOCK;
      String state;
      if (block) {
        state = "block (no staging mount)";
      } else if (m.isEmpty()) {
        state = "not-mounted";
        findings.add(Finding.error("staging-not-mounted",
            "The journal says " + volumeId + " is staged at " + p + ", but nothing is mounted there (unmounted"
                + " behind the plugin's back, or the host rebooted). Allocations using it see an empty directory"
                + " or fail.",
            "findmnt --mountpoint " + p + "; dmesg | tail -n 50  # then restart the allocations"
                + allocHint(record.get()) + " so Nomad stages the volume again"));
      } else if (majorMinor.isPresent() && !m.get().majorMinor().equals(majorMinor.get())) {
        state = "wrong-device";
        findings.add(Finding.error("staging-wrong-device",
            "Something else is mounted at " + p + " (" + m.get().source() + ", device " + m.get().majorMinor()
                + ") instead of " + volumeId + "'s device " + device.map(Path::toString).orElse("?") + ".",
            "findmnt --mountpoint " + p));
      } else {
        state = "ok";
        figures.flatMap(VolumeUsage::fs).filter(f -> figures.flatMap(VolumeUsage::mountedAt).equals(Optional.of(p)))
            .ifPresent(f -> s.put("usage", usageJson(f)));
      }
      s.put("state", state);
      staging.add(s);
    }

    // ---- publish mounts ----
    List<Map<String, Object>> published = new ArrayList<>();
    for (Published t : record.map(StagedVolume::targets).orElse(List.of())) {
      Map<String, Object> s = new LinkedHashMap<>();
      s.put("path", t.target().toString());
      s.put("allocation_id", NomadPaths.allocationId(t.target()));
      s.put("staging_path", t.stagingPath().toString());
      s.put("read_only", t.readOnly());
      Optional<MountEntry> m = mountAt(mounts, t.target());
      s.put("mount", m.map(ChainInspector::mountJson));
      m.ifPresent(e -> holds.add("publish mount " + t.target()));
      String state = m.isEmpty() ? "not-mounted" : m.get().readOnly() != t.readOnly() ? "wrong-mode" : "ok";
      if (m.isEmpty()) {
        findings.add(Finding.warning("publish-not-mounted",
            "The journal says " + volumeId + " is published at " + t.target() + NomadPaths.allocationId(t.target())
                .map(a -> " (allocation " + a + ")").orElse("") + ", but nothing is mounted there.",
            NomadPaths.allocationId(t.target()).map(a -> "nomad alloc status " + a).orElse("findmnt --mountpoint " + t.target())));
      } else if (!state.equals("ok")) {
        findings.add(Finding.warning("publish-wrong-mode",
            t.target() + " is mounted " + (m.get().readOnly() ? "read-only" : "read-write") + " but was published "
                + (t.readOnly() ? "read-only" : "read-write") + ".",
            "findmnt --mountpoint " + t.target()));
      }
      s.put("state", state);
      published.add(s);
    }

    // ---- mounts of the device that no record explains ----
    List<Map<String, Object>> unrecorded = new ArrayList<>();
    if (majorMinor.isPresent()) {
      String mm = majorMinor.get();
      for (MountEntry m : mounts) {
        if (m.majorMinor().equals(mm) && !recordedPaths.contains(m.mountPoint())) {
          unrecorded.add(mountJson(m));
          holds.add("unrecorded mount " + m.mountPoint());
          findings.add(Finding.error("mount-without-record",
              m.mountPoint() + " mounts " + volumeId + "'s device " + device.get() + " but the node journal has no"
                  + " record of it" + (record.isEmpty() ? " (no record of the volume at all)" : "")
                  + ": the plugin will not unmount it, and NodeUnstage cannot finish while it exists.",
              "fuser -vm " + m.mountPoint() + "  # if no process uses it: umount " + m.mountPoint()));
        }
      }
    }

    // ---- replication: the copies this node sends, or the one it holds ----
    Optional<StorageReads.Answer<Replicas.View>> replicasRead = replicating.map(r -> StorageReads.await(r, deadline));
    Optional<ReplicaLayer.Result> replication = replicasRead
        .flatMap(a -> a.value().isPresent() ? ReplicaLayer.of(volumeId, a.value().get(), clock.instant())
            : Optional.of(ReplicaLayer.unread(a.error().map(e -> "unread: " + e.getMessage())
                .orElse("the storage did not answer within " + waited))));
    // A replica held here, or a volume replicated from here, is known to this node even with nothing staged.
    boolean replicated = replicasRead.flatMap(StorageReads.Answer::value)
        .filter(v -> v.owned().isPresent() || v.held().isPresent()).isPresent();
    replication.ifPresent(r -> findings.addAll(r.findings()));

    // ---- Nomad ----
    Optional<NomadVolume> ref = nomadVolume.or(() -> record.flatMap(r -> r.stagingPaths().stream()
        .map(NomadPaths::fromStagingPath).flatMap(Optional::stream).findFirst()));
    NomadLayer.Result nomadResult;
    Optional<List<String>> publishedTo = backendKnown
        ? Optional.ofNullable(object.properties().get("publishedTo"))
            .map(s -> s.isEmpty() ? List.<String>of() : List.of(s.split(",", -1)))
        : Optional.empty();
    if (forPeer) {
      nomadResult = NomadLayer.notConsulted("asked by another node for this node's own layers");
    } else if (nomad.isEmpty()) {
      nomadResult = NomadLayer.notConsulted("Nomad's task API is not available to this plugin (it is not running as"
          + " a Nomad task with NOMAD_SECRETS_DIR set)");
    } else if (ref.isEmpty()) {
      nomadResult = NomadLayer.notConsulted("no Nomad volume id is known for " + volumeId + ": nothing is staged"
          + " here under Nomad's layout; ask by Nomad id (caravan inspect <volume> --namespace <namespace>)");
    } else {
      Set<String> allocsHere = record.map(r -> r.targets().stream().map(t -> NomadPaths.allocationId(t.target()))
          .flatMap(Optional::stream).collect(Collectors.toSet())).orElse(Set.of());
      nomadResult = nomad.get().inspect(ref.get(), nomadVolume.isPresent() ? "the request" : "the staging path",
          new NomadLayer.Local(volumeId, record.isPresent(), allocsHere, publishedTo));
    }
    findings.addAll(nomadResult.findings());

    // ---- the other nodes the chain points at, over the peer channel ----
    Optional<PeerLayer.Result> peerResult = Optional.empty();
    Optional<PeerNodes> p = peers;
    if (!forPeer && p.isPresent()) {
      Map<String, List<String>> pointedAt = new TreeMap<>();
      p.get().owner(volumeId).ifPresent(o -> pointedAt.computeIfAbsent(o, k -> new ArrayList<>())
          .add("the volume id names it as the owner"));
      publishedTo.orElse(List.of()).forEach(h -> pointedAt.computeIfAbsent(h, k -> new ArrayList<>())
          .add("the storage admits it (publishedTo)"));
      String detach = ref.map(n -> "nomad volume detach -namespace " + n.namespace() + " " + n.volumeId())
          .orElse("nomad volume detach <volume>");
      // Nomad's claims name Nomad nodes; the Nomad layer maps them to CSI node ids from the plugin it read.
      peerResult = Optional.of(PeerLayer.ask(p.get(), volumeId, pointedAt, nomadResult.claims(), nodeId, detach));
      findings.replaceAll(peerResult.get()::guard);
      findings.addAll(peerResult.get().findings());
    }

    // A volume Nomad names is known, whatever the storage says: its absence there is a finding, not a 404.
    boolean known = object.exists() || record.isPresent() || device.isPresent() || nomadVolume.isPresent()
        || peerResult.map(PeerLayer.Result::heldSomewhere).orElse(false) || replicated;
    Map<String, Object> layers = new LinkedHashMap<>();
    layers.put("backend", layer(backendState, backendEvidence));
    layers.put("attachment", layer(attachState, attachEvidence));
    layers.put("staging", staging);
    layers.put("published", published);
    layers.put("unrecorded_mounts", unrecorded);
    layers.put("journal", layer(journalState, journalEvidence));
    replication.ifPresent(r -> layers.put("replication", r.layer()));
    layers.put("nomad", nomadResult.layer());
    peerResult.ifPresent(r -> layers.put("peer_nodes", r.layer()));
    List<String> allocations = record.map(r -> r.targets().stream().map(t -> NomadPaths.allocationId(t.target()))
        .flatMap(Optional::stream).distinct().toList()).orElse(List.of());
    return new Seen(new Chain(volumeId, nodeId, known, clock.instant().toString(), layers, List.copyOf(findings)),
        List.copyOf(holds), allocations);
  }

  private static String allocHint(StagedVolume v) {
    List<String> allocs = v.targets().stream().map(t -> NomadPaths.allocationId(t.target()))
        .flatMap(Optional::stream).distinct().toList();
    return allocs.isEmpty() ? "" : " (nomad alloc restart " + String.join(", ", allocs) + ")";
  }

  private static Optional<MountEntry> mountAt(List<MountEntry> mounts, Path p) {
    MountEntry last = null;
    for (MountEntry m : mounts) {
      if (m.mountPoint().equals(p)) {
        last = m; // the topmost mount at a path is the last one listed
      }
    }
    return Optional.ofNullable(last);
  }

  private static Map<String, Object> layer(String state, Map<String, Object> evidence) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("state", state);
    m.put("evidence", evidence);
    return m;
  }

  private static Map<String, Object> unreadableJson(NodeJournal.Unreadable u) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("file", u.file().toString());
    m.put("bytes", u.bytes());
    m.put("written_before_this_boot", u.stale());
    return m;
  }

  /** A journal record the plugin cannot read: what it means for the volume, and what to do. */
  private static Finding unreadableFinding(NodeJournal.Unreadable u) {
    String next = "cat " + u.file() + "; findmnt --raw | grep " + u.volumeId()
        + "  # once nothing of the volume is staged or published on this node: mv " + u.file() + " " + u.file()
        + ".set-aside";
    if (u.stale()) {
      return Finding.info("journal-record-unreadable-stale",
          "The node journal record " + u.file() + " of " + u.volumeId() + " cannot be read (" + u.bytes()
              + " bytes); it was last written before this host booted, so nothing it describes exists any more"
              + " and it does not count as use. The plugin keeps it for a person to look at.", next);
    }
    return Finding.error("journal-record-unreadable",
        "The node journal record " + u.file() + " of " + u.volumeId() + " cannot be read (" + u.bytes()
            + " bytes). It may describe a stage or publish that still exists on this node, so the plugin keeps it"
            + " and counts " + u.volumeId() + " as in use here: DeleteVolume is refused until it is resolved.",
        next);
  }

  private static Map<String, Object> recordJson(StagedVolume v) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("access_type", v.accessType().name().toLowerCase(Locale.ROOT));
    m.put("fs_type", v.fsType());
    m.put("mount_flags", v.mountFlags().stream().map(ChainInspector::redactOption).toList());
    m.put("device", v.device().map(Path::toString));
    m.put("staging_paths", v.stagingPaths().stream().map(Path::toString).toList());
    m.put("targets", v.targets().stream().map(t -> Map.of("path", t.target().toString(), "staging_path",
        t.stagingPath().toString(), "read_only", t.readOnly())).toList());
    return m;
  }

  static Map<String, Object> mountJson(MountEntry e) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("mount_point", e.mountPoint().toString());
    m.put("source", e.source());
    m.put("fs_type", e.fsType());
    m.put("major_minor", e.majorMinor());
    m.put("root", e.root());
    m.put("options", redactOptions(e.mountOptions()));
    m.put("super_options", redactOptions(e.superOptions()));
    m.put("read_only", e.readOnly());
    return m;
  }

  private static Map<String, Object> usageJson(FsStats f) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("total_bytes", f.totalBytes());
    m.put("used_bytes", f.usedBytes());
    m.put("available_bytes", f.availableBytes());
    return m;
  }

  /** {@code user=bob,password=x,ro} becomes {@code user=<redacted>,password=<redacted>,ro}. */
  static String redactOptions(String options) {
    return java.util.Arrays.stream(options.split(",", -1)).map(ChainInspector::redactOption)
        .collect(Collectors.joining(","));
  }

  private static String redactOption(String option) {
    int eq = option.indexOf('=');
    if (eq > 0 && SECRET_OPTION.matcher(option.substring(0, eq)).matches()) {
      return option.substring(0, eq) + "=<redacted>";
    }
    return option;
  }

  private static List<String> listNames(Path dir) {
    List<String> names = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      entries.forEach(p -> names.add(p.getFileName().toString()));
    } catch (IOException e) {
      // no such device, or no holders directory: nothing holds it
    }
    names.sort(null);
    return names;
  }

  private static Optional<String> readSys(Path file) {
    try {
      return Optional.of(Files.readString(file).strip());
    } catch (IOException e) {
      return Optional.empty();
    }
  }

  /**
   * Whether two paths name one block device: the same path, or the same major:minor. A device-mapper
   * map has two names, /dev/dm-N and its udev link /dev/mapper/NAME, and which one a lookup returns
   * depends on whether udev had made the link yet.
   */
  private static boolean sameDevice(Path a, Path b) {
    if (a.equals(b)) {
      return true;
    }
    try {
      return BlockDevices.majorMinor(a).equals(BlockDevices.majorMinor(b));
    } catch (RuntimeException e) {
      return false;
    }
  }
}
