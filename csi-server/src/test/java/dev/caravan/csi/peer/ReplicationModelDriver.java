package dev.caravan.csi.peer;

import static dev.caravan.csi.peer.ReplicationKillOnFileTest.sha256;

import dev.caravan.csi.backend.Replication;
import dev.caravan.csi.backend.ReplicationSettings;
import dev.caravan.csi.peer.ReplicationModel.Copy;
import dev.caravan.csi.peer.ReplicationModel.Step;
import dev.caravan.csi.peer.ReplicationModel.Vol;
import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.Snapshot;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeContentSource;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * Carries out {@link ReplicationModel} steps on two plugin instances in this JVM ({@link PeerCluster}:
 * n1 owns every volume, n2 holds the replicas), updates the model by what answered, and checks after
 * every step that what the nodes hold is what the model says:
 * <ul>
 *   <li>a round succeeds exactly when the replica node answers, and a cut stream changes no copy;
 *   <li>the replica node lists a copy of a volume only once a round of that volume has made one, at
 *       the size its source had when that round began;
 *   <li>after a round of a volume that is not staged, the copy is the owner's image byte for byte, and
 *       replication keeps one copy and its digest list there, and on the owner only the digest list;
 *   <li>a restored copy holds exactly the records its source had when the round began: none missing,
 *       none the source never had (a record's bytes are drawn from its volume's name and incarnation);
 *   <li>the user's snapshots are the user's; DeleteVolume takes the replica with it, or keeps it while
 *       its node is down, and nothing of either node's storage is left at the end.
 * </ul>
 */
final class ReplicationModelDriver implements AutoCloseable {
  static final long MIB = 1L << 20;
  static final long IMAGE = 32 * MIB;
  private static final long GROWTH = 8 * MIB;
  private static final int RECORD = 64;
  /** An invariant the nodes broke; {@code kind} names it, so that shrinking keeps to the same one. */
  static final class Broken extends AssertionError {
    private static final long serialVersionUID = 1L;
    final String kind;

    Broken(String kind, String message) {
      super(kind + ": " + message);
      this.kind = kind;
    }

    Broken(String kind, String message, Throwable cause) {
      super(kind + ": " + message, cause);
      this.kind = kind;
    }
  }

  final PeerCluster cluster;
  final ReplicationModel m = new ReplicationModel();
  /** What the run did, by what and how it ended, printed after it and checked for coverage. */
  final Map<String, Integer> coverage = new TreeMap<>();
  private int restores;

  ReplicationModelDriver() throws Exception {
    this.cluster = PeerCluster.start("n1", "n2");
  }

  private void count(String what) {
    coverage.merge(what, 1, Integer::sum);
  }

  private static void expect(boolean holds, String kind, String message) {
    if (!holds) {
      throw new Broken(kind, message);
    }
  }

  void apply(Step s) throws Exception {
    Vol v = m.volumes.get(s.vol());
    try {
      switch (s.op()) {
        case CREATE -> create(s.vol(), v);
        case STAGE -> {
          if (v != null) {
            stage(v);
          }
        }
        case WRITE -> {
          if (v != null && v.staged) {
            write(v, s.n());
          }
        }
        case UNSTAGE -> {
          if (v != null) {
            unstage(v);
          }
        }
        case ROUND -> {
          if (v != null) {
            round(v);
          }
        }
        case CUT -> {
          if (v != null) {
            cut(v, s.n());
          }
        }
        case RESTORE -> {
          if (v != null && m.replicaUp && v.copy != null) {
            restore(v);
          }
        }
        case SNAPSHOT -> {
          if (v != null) {
            snapshot(v, s.n());
          }
        }
        case DELETE_SNAPSHOT -> {
          if (v != null && v.snapshots.containsKey(s.n())) {
            cluster.csi("n1").deleteSnapshot(DeleteSnapshotRequest.newBuilder()
                .setSnapshotId(v.snapshots.remove(s.n())).build());
          }
        }
        case EXPAND -> {
          if (v != null && !v.staged) {
            expand(v);
          }
        }
        case REPLICA_DOWN -> {
          if (m.replicaUp) {
            cluster.stopNode("n2");
            m.replicaUp = false;
          }
        }
        case REPLICA_UP -> {
          if (!m.replicaUp) {
            cluster.startNode("n2");
            m.replicaUp = true;
          }
        }
        case RESTART_OWNER -> restartOwner();
        case DELETE -> {
          if (v != null && !v.staged) {
            delete(v);
          }
        }
      }
    } catch (StatusRuntimeException e) {
      throw new Broken("every call the model expects to succeed succeeds",
          s + " answered " + e.getStatus().getCode() + ": " + e.getStatus().getDescription(), e);
    }
  }

  private Replication replication() {
    return cluster.node("n1").plugin.backend().controller().replication().orElseThrow();
  }

  private ReplicationScheduler scheduler() {
    return cluster.node("n1").plugin.peering().orElseThrow().scheduler().orElseThrow();
  }

  private Replicator replicator() {
    return cluster.node("n1").plugin.peering().orElseThrow().replicator().orElseThrow();
  }

  private void create(String name, Vol v) throws InterruptedException {
    Instant before = Instant.now();
    CreateVolumeRequest req = PeersTest.create("model-" + name, "n1", IMAGE).toBuilder()
        .putParameters("replicas", "1").putParameters("replicationInterval", "1h").build();
    if (!m.replicaUp) {
      // Before a volume is made its name is claimed on every node, and its replica placed: both need n2.
      try {
        cluster.csi("n1").createVolume(req);
        throw new Broken("CreateVolume needs every node", "CreateVolume of " + name + " succeeded with n2 down");
      } catch (StatusRuntimeException e) {
        expect(e.getStatus().getCode() == Status.Code.UNAVAILABLE && e.getStatus().getDescription().contains("n2"),
            "CreateVolume needs every node", "CreateVolume with n2 down answered " + e.getStatus());
        count("create, replica down: unavailable");
        return;
      }
    }
    Volume made = cluster.csi("n1").createVolume(req).getVolume();
    if (v != null) {
      expect(made.getVolumeId().equals(v.id), "CreateVolume is idempotent",
          "a second CreateVolume of " + name + " answered " + made.getVolumeId() + ", not " + v.id);
      return;
    }
    int incarnation = m.incarnations.merge(name, 1, Integer::sum);
    Vol nv = new Vol(name, made.getVolumeId(), incarnation, made.getCapacityBytes());
    m.volumes.put(name, nv);
    if (m.orphans.remove(nv.id) != null) {
      // Made again under a deleted volume's name, so with its id: the deleted one's replica is gone first.
      count("create over a kept replica of its id");
    }
    settle(nv, before);
    count("create");
  }

  /**
   * Stops the scheduler's own rounds of {@code v} (the model starts every round from now on), and
   * learns what the round it runs at once for a volume it has not seen did, if it ran one.
   */
  private void settle(Vol v, Instant since) {
    ReplicationScheduler scheduler = scheduler();
    scheduler.hold(v.id);
    scheduler.last(v.id, "n2").filter(r -> !r.started().isBefore(since)).ifPresent(r -> {
      if (r.error().isEmpty()) {
        v.copy = v.now();
        m.orphans.remove(v.id);
        count("a scheduler's first round made a copy");
      }
    });
  }

  private Path staging(String node, String volumeId) throws IOException {
    return Files.createDirectories(cluster.work.resolve(node + "-mnt").resolve(volumeId));
  }

  private void stage(Vol v) throws IOException {
    stageOn("n1", v.id);
    v.staged = true;
    v.formatted = true;
  }

  private void stageOn(String node, String volumeId) throws IOException {
    NodeGrpc.newBlockingStub(cluster.node(node).channel.channel()).nodeStageVolume(NodeStageVolumeRequest.newBuilder()
        .setVolumeId(volumeId).setStagingTargetPath(staging(node, volumeId).toString()).setVolumeCapability(ReplicationOnFileTest.CAP).build());
  }

  private void unstage(Vol v) throws IOException {
    unstageOn("n1", v.id);
    v.staged = false;
  }

  private void unstageOn(String node, String volumeId) throws IOException {
    NodeGrpc.newBlockingStub(cluster.node(node).channel.channel()).nodeUnstageVolume(NodeUnstageVolumeRequest
        .newBuilder().setVolumeId(volumeId).setStagingTargetPath(staging(node, volumeId).toString()).build());
  }

  private void write(Vol v, long count) throws IOException {
    ByteBuffer bytes = ByteBuffer.wrap(records(v.name, v.incarnation, v.records, v.records + count));
    try (FileChannel ch = FileChannel.open(staging("n1", v.id).resolve("records"), StandardOpenOption.CREATE,
        StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
      while (bytes.hasRemaining()) {
        ch.write(bytes);
      }
      ch.force(true);
    }
    v.records += count;
  }

  private void round(Vol v) throws IOException {
    ReplicationSettings settings = replication().settings(v.id)
        .orElseThrow(() -> new Broken("a replicated volume keeps its settings", v.name + " has none"));
    ReplicationScheduler scheduler = scheduler();
    scheduler.round(v.id, settings);
    ReplicationScheduler.LastRound last = scheduler.last(v.id, "n2")
        .orElseThrow(() -> new Broken("every round is recorded", "the round of " + v.name + " left no record"));
    boolean ok = last.error().isEmpty();
    expect(ok == m.replicaUp, "a round succeeds exactly when the replica node answers",
        "the round of " + v.name + " with n2 " + (m.replicaUp ? "up" : "down") + " ended "
            + last.error().map(e -> "failing: " + e).orElse("ok"));
    if (!ok) {
      count("round, replica down: failed");
      return;
    }
    v.copy = v.now();
    m.orphans.remove(v.id);
    String point = converged(v);
    if (!v.staged) {
      expect(sha256(replicaDir(v.id).resolve(point + ".img")).equals(sha256(image(v.id))),
          "a copy of a volume nothing writes is its source byte for byte",
          "n2's " + point + " of " + v.name + " differs from n1's image");
      count("round: copy compared byte for byte");
    } else {
      count("round while staged");
    }
  }

  /** One copy and its digest list on n2, and only the settings and that digest list on n1; the point's name. */
  private String converged(Vol v) {
    List<String> held = PeerCluster.list(replicaDir(v.id));
    List<String> images = held.stream().filter(f -> f.matches("repl-[0-9]+\\.img")).toList();
    expect(images.size() == 1, "a replica is one complete copy", "n2 holds " + held + " for " + v.name);
    String point = images.getFirst().substring(0, images.getFirst().length() - ".img".length());
    expect(held.equals(List.of(point + ".digests", point + ".img", "replica-of")), "a replica is one complete copy",
        "n2 holds " + held + " for " + v.name);
    List<String> owner = PeerCluster.list(cluster.node("n1").fileReplicationDir(v.id));
    expect(owner.equals(List.of(point + ".digests", "settings")),
        "after a round the owner keeps only what the next one needs",
        "n1 holds " + owner + " for " + v.name + ", whose replica is " + point);
    return point;
  }

  private void cut(Vol v, long after) {
    Replicator.Attempt a = replicator().replicate(v.id, "n2", out -> new CutAfter(out, after));
    if (!m.replicaUp) {
      expect(a.failure().isPresent(), "a round succeeds exactly when the replica node answers",
          "a send of " + v.name + " with n2 down succeeded");
      count("cut, replica down: failed");
    } else if (a.failure().isEmpty()) {
      v.copy = v.now();
      m.orphans.remove(v.id);
      count("cut after the stream's end: a whole copy");
    } else {
      count("cut mid-stream: the copy kept");
    }
  }

  private void restore(Vol v) throws Exception {
    Copy copy = v.copy;
    Snapshot listed = copies(v.id).getFirst();
    Volume restored = cluster.csi("n2").createVolume(PeersTest.create("model-restored-" + ++restores, "auto", IMAGE)
        .toBuilder().setVolumeContentSource(VolumeContentSource.newBuilder().setSnapshot(
            VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(listed.getSnapshotId())))
        .build()).getVolume();
    String id = restored.getVolumeId();
    try {
      expect(PeersTest.nodeOf(restored).equals("n2"), "a copy is restored on the node that holds it",
          v.name + "'s copy was restored on " + PeersTest.nodeOf(restored));
      expect(restored.getCapacityBytes() == copy.bytes(), "a copy is its source's size",
          "restored " + restored.getCapacityBytes() + " bytes of " + v.name + ", whose source had " + copy.bytes());
      stageOn("n2", id);
      byte[] read;
      try {
        Path file = staging("n2", id).resolve("records");
        read = Files.exists(file) ? Files.readAllBytes(file) : new byte[0];
      } finally {
        unstageOn("n2", id);
      }
      byte[] want = records(v.name, copy.incarnation(), 0, copy.records());
      expect(java.util.Arrays.equals(read, want), "a replica never holds bytes its source never had",
          "the copy of " + v.name + " (incarnation " + copy.incarnation() + ") restored " + describe(read, v.name,
              copy.incarnation()) + "; its source had " + copy.records() + " records when the round began");
    } finally {
      cluster.csi("n2").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    }
    count(copy.records() > 0 ? "restore: records compared" : "restore: no records yet");
  }

  private void snapshot(Vol v, long number) {
    String id = cluster.csi("n1").createSnapshot(CreateSnapshotRequest.newBuilder()
        .setName("model-" + v.name + "-s" + number).setSourceVolumeId(v.id).build()).getSnapshot().getSnapshotId();
    String before = v.snapshots.putIfAbsent(number, id);
    expect(before == null || before.equals(id), "CreateSnapshot is idempotent",
        "snapshot #" + number + " of " + v.name + " answered " + id + ", not " + before);
  }

  private void expand(Vol v) {
    long capacity = cluster.csi("n1").controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(v.id).setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(v.bytes + GROWTH)).build())
        .getCapacityBytes();
    expect(capacity >= v.bytes + GROWTH, "a volume grows as asked", v.name + " grew to " + capacity);
    v.bytes = capacity;
  }

  private void restartOwner() throws IOException {
    Instant before = Instant.now();
    cluster.stopNode("n1");
    cluster.startNode("n1");
    for (Vol v : m.volumes.values()) {
      settle(v, before);
    }
  }

  private void delete(Vol v) {
    DeleteVolumeRequest req = DeleteVolumeRequest.newBuilder().setVolumeId(v.id).build();
    if (!v.snapshots.isEmpty()) {
      Instant before = Instant.now();
      try {
        cluster.csi("n1").deleteVolume(req);
        throw new Broken("a volume with snapshots is never deleted", v.name + " was deleted with " + v.snapshots);
      } catch (StatusRuntimeException e) {
        expect(e.getStatus().getCode() == Status.Code.FAILED_PRECONDITION, "a volume with snapshots is never deleted",
            "DeleteVolume of " + v.name + " with snapshots answered " + e.getStatus().getCode());
        count("delete refused: snapshots");
        // DeleteVolume holds the volume's rounds while it runs and releases them after, refused or not:
        // the scheduler may then start the first round of a volume it had not run one of yet.
        settle(v, before);
        return;
      }
    }
    cluster.csi("n1").deleteVolume(req);
    m.volumes.remove(v.name);
    if (m.replicaUp) {
      expect(PeerCluster.list(replicaDir(v.id)).isEmpty(), "DeleteVolume takes the replica with it",
          "n2 still holds " + PeerCluster.list(replicaDir(v.id)) + " of " + v.name);
      m.orphans.remove(v.id);
      count("delete");
    } else if (v.copy != null) {
      m.orphans.put(v.id, v.copy);
      count("delete, replica down: replica kept");
    }
  }

  /** The checks that hold between any two steps. */
  void check() {
    for (Vol v : m.volumes.values()) {
      if (!m.replicaUp) {
        // A list leaves no node out, so that nothing looks deleted that is not: with n2 down it is refused.
        try {
          cluster.csi("n1").listSnapshots(ListSnapshotsRequest.newBuilder().setSourceVolumeId(v.id).build());
          throw new Broken("a list leaves no node out", "ListSnapshots of " + v.name + " answered with n2 down");
        } catch (StatusRuntimeException e) {
          expect(e.getStatus().getCode() == Status.Code.UNAVAILABLE && e.getStatus().getDescription().contains("n2"),
              "a list leaves no node out", "ListSnapshots with n2 down answered " + e.getStatus());
        }
        continue;
      }
      Set<String> users = new TreeSet<>();
      cluster.csi("n1").listSnapshots(ListSnapshotsRequest.newBuilder().setSourceVolumeId(v.id).build())
          .getEntriesList().stream().map(e -> e.getSnapshot().getSnapshotId()).filter(id -> !id.startsWith("repl-"))
          .forEach(users::add);
      expect(users.equals(new TreeSet<>(v.snapshots.values())), "replication never touches a user's snapshots",
          v.name + "'s snapshots are " + users + ", not " + v.snapshots.values());
      List<Snapshot> listed = copies(v.id);
      if (v.copy == null) {
        expect(listed.isEmpty(), "a copy is listed only once a round of its volume made it",
            "n2 lists " + listed.stream().map(Snapshot::getSnapshotId).toList() + " as a copy of " + v.name
                + " (incarnation " + v.incarnation + "), which no round of it made");
      } else {
        expect(listed.size() == 1, "a replica node lists its newest copy", "n2 lists " + listed.size()
            + " copies of " + v.name);
        expect(listed.getFirst().getSizeBytes() == v.copy.bytes(), "a copy is its source's size",
            "n2's copy of " + v.name + " is " + listed.getFirst().getSizeBytes() + " bytes; its source had "
                + v.copy.bytes());
      }
    }
    if (m.replicaUp) {
      for (String orphan : m.orphans.keySet()) {
        expect(!PeerCluster.list(replicaDir(orphan)).isEmpty(), "a replica whose node was down at DeleteVolume is kept",
            "n2 no longer holds the replica of deleted volume " + orphan);
      }
    }
  }

  /** Takes everything down through the API, then checks that neither node holds anything of it. */
  void tearDown() throws Exception {
    if (!m.replicaUp) {
      apply(new Step(ReplicationModel.Op.REPLICA_UP, "", 0));
    }
    for (Vol v : List.copyOf(m.volumes.values())) {
      if (v.staged) {
        unstage(v);
      }
      for (long n : List.copyOf(v.snapshots.keySet())) {
        apply(new Step(ReplicationModel.Op.DELETE_SNAPSHOT, v.name, n));
      }
      delete(v);
    }
    for (String orphan : List.copyOf(m.orphans.keySet())) {
      expect(replicator().deleteReplica(orphan, "n2"), "a kept replica is deleted once its node answers",
          "n2 had nothing to delete of " + orphan);
      m.orphans.remove(orphan);
    }
    for (String node : List.of("n1", "n2")) {
      for (String sub : List.of("volumes", "snapshots", "replication", "replicas")) {
        expect(cluster.files(node, sub).isEmpty(), "nothing is left", node + "'s " + sub + " holds "
            + cluster.files(node, sub));
      }
    }
    String work = cluster.work.toString();
    try (Stream<String> mounts = Files.lines(Path.of("/proc/self/mountinfo"))) {
      List<String> left = mounts.filter(l -> l.contains(work)).toList();
      expect(left.isEmpty(), "nothing is left", "mounts " + left);
    }
    try (Stream<Path> loops = Files.list(Path.of("/sys/block"))) {
      List<String> left = loops.map(p -> p.resolve("loop/backing_file")).filter(Files::exists).map(p -> {
        try {
          return Files.readString(p).strip();
        } catch (IOException e) {
          return ""; // detached meanwhile
        }
      }).filter(f -> f.startsWith(work)).toList();
      expect(left.isEmpty(), "nothing is left", "loop devices on " + left);
    }
  }

  /** The copies of {@code volumeId} that n2's ListSnapshots shows. */
  private List<Snapshot> copies(String volumeId) {
    return cluster.csi("n2").listSnapshots(ListSnapshotsRequest.newBuilder().setSourceVolumeId(volumeId).build())
        .getEntriesList().stream().map(e -> e.getSnapshot()).filter(s -> s.getSnapshotId().startsWith("repl-"))
        .toList();
  }

  private Path image(String id) {
    return cluster.node("n1").fileImage(id);
  }

  private Path replicaDir(String id) {
    return cluster.node("n2").fileReplicaDir(id);
  }

  /**
   * Records {@code from} to {@code to - 1} of a volume: each its number, bytes drawn from the volume's
   * name, incarnation and number, and the SHA-256 of both; so a record says whose it is.
   */
  static byte[] records(String name, int incarnation, long from, long to) {
    ByteBuffer all = ByteBuffer.allocate(Math.toIntExact((to - from) * RECORD));
    for (long seq = from; seq < to; seq++) {
      all.put(record(name, incarnation, seq));
    }
    return all.array();
  }

  private static byte[] record(String name, int incarnation, long seq) {
    byte[] body = new byte[RECORD - 32];
    new Random(((long) name.hashCode() << 32) ^ ((long) incarnation << 40) ^ seq).nextBytes(body);
    ByteBuffer.wrap(body).putLong(seq);
    return ByteBuffer.allocate(RECORD).put(body).put(digest(body)).array();
  }

  /** What a restored records file holds, for a failure message: its count, and its first foreign record. */
  private static String describe(byte[] read, String name, int incarnation) {
    if (read.length % RECORD != 0) {
      return read.length + " bytes, not whole records";
    }
    for (int i = 0; i < read.length / RECORD; i++) {
      byte[] one = java.util.Arrays.copyOfRange(read, i * RECORD, (i + 1) * RECORD);
      if (!java.util.Arrays.equals(one, record(name, incarnation, i))) {
        boolean older = incarnation > 1 && java.util.Arrays.equals(one, record(name, incarnation - 1, i));
        return read.length / RECORD + " records, of which record " + i + " is "
            + (older ? "the deleted volume of the same name's" : "not this volume's");
      }
    }
    return read.length / RECORD + " records, each this volume's";
  }

  private static byte[] digest(byte[] bytes) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(bytes);
    } catch (NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }


  @Override
  public void close() throws IOException {
    // Whatever a failed run left staged is unstaged so that the cluster's directory can go.
    for (Vol v : m.volumes.values()) {
      if (v.staged && cluster.node("n1").plugin != null) {
        try {
          unstage(v);
        } catch (RuntimeException ignored) {
          // the failure that ended the run is reported; close only tidies up
        }
      }
    }
    cluster.close();
  }
}
