package dev.caravan.csi.peer;

import static dev.caravan.csi.peer.ChainJson.at;
import static dev.caravan.csi.peer.ChainJson.findings;
import static dev.caravan.csi.peer.ChainJson.object;
import static dev.caravan.csi.peer.ChainJson.value;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.observe.inspect.ReplicaLayer;
import dev.caravan.csi.support.Json;
import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.Snapshot;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeContentSource;
import dev.caravan.storage.testing.HostRequirements;
import io.grpc.Status;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Replication on the {@code file} backend, on the host: two plugin instances in this JVM, peers on
 * loopback mTLS ({@link PeerCluster}), each with its own data directory. Records with their own
 * checksums are written through a staged mount on the owner; the copies on the replica node are
 * restored after the owner is stopped, and every record there is checked.
 */
class ReplicationOnFileTest {
  private static final long MIB = 1L << 20;
  private static final long IMAGE = 64 * MIB;
  private static final int RECORD = 64;
  static final VolumeCapability CAP = VolumeCapability.newBuilder()
      .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
      .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
      .build();

  private final Set<String> lost = ConcurrentHashMap.newKeySet();
  private PeerCluster cluster;
  /** Volume id to staging path, on the node it is staged on, for the clean-up. */
  private final Map<String, Map.Entry<String, Path>> staged = new LinkedHashMap<>();

  @BeforeEach
  void start() throws Exception {
    Optional<String> why = HostRequirements.whyNoLoopAndExt4();
    assumeTrue(why.isEmpty(), () -> "replication on the file backend stages ext4 on loop devices: " + why.orElse(""));
    Map<String, Long> reserves = new LinkedHashMap<>();
    reserves.put("n1", 0L);
    reserves.put("n2", 0L);
    // A lost node leaves the others' peer sets, as discovery drops it.
    cluster = PeerCluster.start(reserves, PeerCluster.leavingOut(lost));
  }

  @AfterEach
  void stop() throws Exception {
    if (cluster == null) {
      return;
    }
    try {
      for (Map.Entry<String, Map.Entry<String, Path>> e : staged.entrySet()) {
        try {
          unstage(e.getValue().getKey(), e.getKey(), e.getValue().getValue());
        } catch (RuntimeException ignored) {
          // the test's own unstage ran, or the node is down: close() below stops what is left
        }
      }
    } finally {
      cluster.close();
    }
  }

  private Replicator replicator(String node) {
    return cluster.node(node).plugin.peering().orElseThrow().replicator().orElseThrow();
  }

  private Path stage(String node, String volumeId) throws IOException {
    Path staging = Files.createDirectories(cluster.work.resolve(node + "-mnt/" + volumeId));
    NodeGrpc.newBlockingStub(cluster.node(node).channel.channel()).nodeStageVolume(NodeStageVolumeRequest.newBuilder()
        .setVolumeId(volumeId).setStagingTargetPath(staging.toString()).setVolumeCapability(CAP).build());
    staged.put(volumeId, Map.entry(node, staging));
    return staging;
  }

  private void unstage(String node, String volumeId, Path staging) {
    NodeGrpc.newBlockingStub(cluster.node(node).channel.channel()).nodeUnstageVolume(NodeUnstageVolumeRequest
        .newBuilder().setVolumeId(volumeId).setStagingTargetPath(staging.toString()).build());
    staged.remove(volumeId);
  }

  /** Appends records {@code from} to {@code to - 1} to {@code file}, each with its own SHA-256, synced. */
  private static void appendRecords(Path file, int from, int to) throws Exception {
    ByteBuffer all = ByteBuffer.allocate((to - from) * RECORD);
    Random random = new Random(from);
    for (int seq = from; seq < to; seq++) {
      byte[] body = new byte[RECORD - 32];
      random.nextBytes(body);
      ByteBuffer.wrap(body).putLong(seq);
      all.put(body).put(MessageDigest.getInstance("SHA-256").digest(body));
    }
    all.flip();
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
        StandardOpenOption.APPEND)) {
      while (all.hasRemaining()) {
        ch.write(all);
      }
      ch.force(true);
    }
  }

  /** The records of {@code file}, checked: each intact, numbered from 0 in order; their count. */
  private static int checkRecords(Path file) throws Exception {
    byte[] bytes = Files.readAllBytes(file);
    assertThat(bytes.length % RECORD).as("the records file holds whole records").isZero();
    for (int i = 0; i < bytes.length / RECORD; i++) {
      byte[] body = Arrays.copyOfRange(bytes, i * RECORD, i * RECORD + RECORD - 32);
      byte[] sum = Arrays.copyOfRange(bytes, i * RECORD + RECORD - 32, (i + 1) * RECORD);
      assertThat(MessageDigest.getInstance("SHA-256").digest(body)).as("record %d's checksum", i).isEqualTo(sum);
      assertThat(ByteBuffer.wrap(body).getLong()).as("record %d's number", i).isEqualTo(i);
    }
    return bytes.length / RECORD;
  }

  private static void writeRandom(Path file, int bytes, long seed) throws IOException {
    byte[] data = new byte[bytes];
    new Random(seed).nextBytes(data);
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(data));
      ch.force(true);
    }
  }

  static void waitFor(Duration bound, BooleanSupplier condition, String what) throws InterruptedException {
    long end = System.nanoTime() + bound.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("waited " + bound + " for " + what);
      }
      Thread.sleep(200);
    }
  }

  /** The replica copies of {@code volumeId} that {@code asked}'s ListSnapshots shows. */
  private List<Snapshot> copies(String asked, String volumeId) {
    return cluster.csi(asked).listSnapshots(ListSnapshotsRequest.newBuilder().setSourceVolumeId(volumeId).build())
        .getEntriesList().stream().map(e -> e.getSnapshot()).filter(s -> s.getSnapshotId().startsWith("repl-"))
        .toList();
  }

  private static long millis(Snapshot s) {
    return s.getCreationTime().getSeconds() * 1000 + s.getCreationTime().getNanos() / 1_000_000;
  }

  /** The files below {@code sub} of {@code node}'s data directory, at any depth. */
  private List<String> filesBelow(String node, String sub) throws IOException {
    Path dir = cluster.node(node).data().resolve(sub);
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> s = Files.walk(dir)) {
      return s.filter(p -> !p.equals(dir)).map(p -> dir.relativize(p).toString()).sorted().toList();
    }
  }

  private double sentOrZero(String volumeId) {
    try {
      return sent(volumeId);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private double sent(String volumeId) throws IOException {
    return cluster.metric("n1", "caravan_replication_sent_bytes_total", "node=\"n2\",volume=\"" + volumeId + "\"");
  }

  @Test
  void aReplicatedVolumeIsRestoredOnItsReplicaNodeAfterTheOwnerIsLostAndRoundsSendOnlyChangedBlocks()
      throws Exception {
    CreateVolumeRequest tooMany = PeersTest.create("protected", "n1", IMAGE).toBuilder()
        .putParameters("replicas", "2").build();
    assertThat(GrpcOutcomes.error(() -> cluster.csi("n2").createVolume(tooMany)).getStatus().getDescription())
        .contains("parameters.replicas 2 is more than the other nodes there are");
    CreateVolumeRequest tooOften = PeersTest.create("protected", "n1", IMAGE).toBuilder()
        .putParameters("replicas", "1").putParameters("replicationInterval", "1s").build();
    assertThat(GrpcOutcomes.error(() -> cluster.csi("n2").createVolume(tooOften)).getStatus().getDescription())
        .contains("parameters.replicationInterval '1s'").contains("at least 5s");

    CreateVolumeRequest req = PeersTest.create("protected", "n1", IMAGE).toBuilder()
        .putParameters("replicas", "1").putParameters("replicationInterval", "5s").build();
    Volume v = cluster.csi("n2").createVolume(req).getVolume();
    String id = v.getVolumeId();
    assertThat(PeersTest.nodeOf(v)).isEqualTo("n1");
    Path mount = stage("n1", id);
    Path records = mount.resolve("records");
    writeRandom(mount.resolve("blob"), (int) (4 * MIB), 1);
    appendRecords(records, 0, 2000);
    long first = System.currentTimeMillis();
    waitFor(Duration.ofSeconds(60), () -> copies("n2", id).stream().anyMatch(s -> millis(s) > first),
        "a copy on n2 newer than the first records");
    // A round counts its bytes once the receiver has answered, a moment after the copy shows on n2.
    waitFor(Duration.ofSeconds(30), () -> sentOrZero(id) >= 4 * MIB, "the first copy's bytes counted");
    double full = sent(id);
    assertThat(full).as("bytes of the first copy: the written blocks, not the image's holes")
        .isGreaterThanOrEqualTo(4 * MIB).isLessThan(IMAGE / 2);

    appendRecords(records, 2000, 2100);
    long second = System.currentTimeMillis();
    waitFor(Duration.ofSeconds(60), () -> copies("n2", id).stream().anyMatch(s -> millis(s) > second),
        "a copy on n2 newer than the second records");
    double changed = sent(id) - full;
    System.out.printf("file replication: first copy %.0f bytes, the rounds after it %.0f bytes (image %d)%n",
        full, changed, IMAGE);
    assertThat(changed).as("bytes of the rounds after the first copy: changed blocks only").isLessThan(IMAGE / 16);

    appendRecords(records, 2100, 2200); // after the copy: lost with the owner, unless a round takes it first

    // The owner is lost: its plugin stops, and discovery no longer lists it.
    cluster.stopNode("n1");
    lost.add("n1");
    List<Snapshot> listed = copies("n2", id);
    assertThat(listed).as("the replica's newest copy, listed as a snapshot of the volume").hasSize(1);
    Snapshot copy = listed.getFirst();
    assertThat(copy.getSnapshotId()).endsWith(".n2");
    assertThat(copy.getReadyToUse()).isTrue();
    assertThat(millis(copy)).isGreaterThan(second);
    assertThat(cluster.csi("n2").listVolumes(ListVolumesRequest.newBuilder().build()).getEntriesList())
        .as("a replica is not a volume").noneMatch(e -> e.getVolume().getVolumeId().contains(id));
    assertThat(GrpcOutcomes.code(() -> cluster.csi("n2").deleteSnapshot(
        dev.caravan.csi.v1.DeleteSnapshotRequest.newBuilder().setSnapshotId(copy.getSnapshotId()).build())))
        .as("a replica's copy is replication's, not DeleteSnapshot's").isEqualTo(Status.Code.FAILED_PRECONDITION);

    Volume restored = cluster.csi("n2").createVolume(PeersTest.create("restored", "auto", IMAGE).toBuilder()
        .setVolumeContentSource(VolumeContentSource.newBuilder().setSnapshot(
            VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(copy.getSnapshotId())))
        .build()).getVolume();
    assertThat(PeersTest.nodeOf(restored)).isEqualTo("n2");
    Path restoredMount = stage("n2", restored.getVolumeId());
    int count = checkRecords(restoredMount.resolve("records"));
    assertThat(count).as("records in the restored volume: every one written before its copy").isGreaterThanOrEqualTo(2100);
    unstage("n2", restored.getVolumeId(), restoredMount);
    cluster.csi("n2").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(restored.getVolumeId()).build());

    lost.remove("n1");
    cluster.startNode("n1");
    unstage("n1", id, mount);
    // The replica node is down when the volume is deleted: its replica is kept (the owner logs it), not lost track of.
    List<String> replica = filesBelow("n2", "replicas");
    cluster.stopNode("n2");
    cluster.csi("n1").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(filesBelow("n1", "replication")).as("the owner's points go with the volume").isEmpty();
    assertThat(filesBelow("n1", "volumes")).as("the owner's volumes").isEmpty();
    cluster.startNode("n2");
    assertThat(filesBelow("n2", "replicas")).as("the replica of a node that was down, kept").isEqualTo(replica);
    assertThat(replicator("n1").deleteReplica(id, "n2")).isTrue();
    assertThat(filesBelow("n2", "replicas")).as("the replica, deleted again once its node answers").isEmpty();
  }

  @Test
  void aCutStreamLeavesTheLastCompleteCopyAndTheNextRoundSendsTheChangedBlocks() throws Exception {
    // No replicas asked for: no scheduled round runs beside the ones this test makes.
    String id = cluster.csi("n2").createVolume(PeersTest.create("plain", "n1", IMAGE)).getVolume().getVolumeId();
    Path mount = stage("n1", id);
    writeRandom(mount.resolve("blob"), (int) (4 * MIB), 2);
    appendRecords(mount.resolve("records"), 0, 500);

    try (CapturedLog log = new CapturedLog()) {
      Replicator.Attempt cutFull = replicator("n1").replicate(id, "n2", out -> new CutAfter(out, MIB));
      assertThat(cutFull.failure()).as("the cut full stream's failure").isPresent();
      waitFor(Duration.ofSeconds(30), () -> copies("n2", id).isEmpty() && noPartial(), "nothing of the cut stream on n2");
      // A MiB got through, so n2 was receiving when the stream broke: it says what the file backend keeps
      // (a resumable receive is local's, not file's).
      waitFor(Duration.ofSeconds(10), () -> !log.matching("WARNING", "broke off", id).isEmpty(),
          "the receiving node's warning about the broken stream");
      assertThat(log.matching("WARNING", "broke off", id)).allSatisfy(l -> assertThat(l)
          .contains("the last complete copy is kept and the partial one removed").doesNotContain("resum"));
    }

    Replicator.Attempt whole = replicator("n1").replicate(id, "n2");
    assertThat(whole.failure()).as("the full stream's failure").isEmpty();
    assertThat(whole.bytes()).isGreaterThanOrEqualTo(4 * MIB);
    Snapshot before = copies("n2", id).getFirst();

    appendRecords(mount.resolve("records"), 500, 600);
    Replicator.Attempt cut = replicator("n1").replicate(id, "n2", out -> new CutAfter(out, 4096));
    assertThat(cut.failure()).as("the cut incremental's failure").isPresent();
    waitFor(Duration.ofSeconds(30), this::noPartial, "the cut incremental's partial file gone on n2");
    assertThat(copies("n2", id)).as("the last complete copy, kept").containsExactly(before);

    Replicator.Attempt incremental = replicator("n1").replicate(id, "n2");
    assertThat(incremental.failure()).as("the incremental's failure").isEmpty();
    assertThat(incremental.bytes()).as("an incremental's bytes").isLessThan(IMAGE / 16);
    Snapshot after = copies("n2", id).getFirst();
    assertThat(millis(after)).isGreaterThan(millis(before));

    // Only the owner's certificate acts on a replica: n2 asking n1 about a volume of a third node is refused.
    assertThat(id).endsWith(".n1");
    String notN2s = id.substring(0, id.length() - ".n1".length()) + ".n3";
    Replicator.Attempt foreign = replicator("n2").replicate(notN2s, "n1");
    assertThat(foreign.failure()).get().satisfies(f ->
        assertThat(Status.fromThrowable(f).getCode()).isEqualTo(Status.Code.PERMISSION_DENIED));

    unstage("n1", id, mount);
    // The volume grows: the next copy grows with it, by the changed blocks still.
    cluster.csi("n2").controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(id)
        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(IMAGE + 32 * MIB)).build());
    Replicator.Attempt grown = replicator("n1").replicate(id, "n2");
    assertThat(grown.failure()).as("the grown volume's round's failure").isEmpty();
    assertThat(grown.bytes()).as("a grown volume's incremental's bytes").isLessThan(IMAGE / 16);
    Snapshot larger = copies("n2", id).getFirst();
    assertThat(larger.getSizeBytes()).isEqualTo(IMAGE + 32 * MIB);

    Volume restored = cluster.csi("n2").createVolume(PeersTest.create("restored", "auto", IMAGE).toBuilder()
        .setVolumeContentSource(VolumeContentSource.newBuilder().setSnapshot(
            VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(larger.getSnapshotId())))
        .build()).getVolume();
    assertThat(restored.getCapacityBytes()).isEqualTo(IMAGE + 32 * MIB);
    Path restoredMount = stage("n2", restored.getVolumeId());
    assertThat(checkRecords(restoredMount.resolve("records"))).isEqualTo(600);
    unstage("n2", restored.getVolumeId(), restoredMount);
    cluster.csi("n2").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(restored.getVolumeId()).build());

    assertThat(replicator("n1").deleteReplica(id, "n2")).isTrue();
    assertThat(filesBelow("n2", "replicas")).isEmpty();
    cluster.csi("n2").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(filesBelow("n1", "replication")).as("the owner's points go with the volume").isEmpty();
  }

  private Map<String, Object> inspect(String node, String volumeId) {
    return ChainJson.inspect(cluster, node, volumeId);
  }

  @Test
  void theInspectorShowsWhereEachCopyIsItsAgeAndALastRoundsErrorNamingTheNode() throws Exception {
    Volume v = cluster.csi("n2").createVolume(PeersTest.create("watched", "n1", IMAGE).toBuilder()
        .putParameters("replicas", "1").putParameters("replicationInterval", "5s").build()).getVolume();
    String id = v.getVolumeId();

    // A plugin that has just started knows no round yet, and says so: a scheduler over n1's volumes that has run none.
    ControllerBackend n1 = cluster.node("n1").plugin.backend().controller();
    try (ReplicationScheduler fresh = new ReplicationScheduler(n1.replication().orElseThrow(), replicator("n1")::replicate,
        Clock.systemUTC())) {
      ReplicaLayer.Result none = ReplicaLayer.of(id, new ReplicaView(n1, "n1", Optional.of(fresh)).of(id),
          Instant.now()).orElseThrow();
      assertThat(none.layer()).containsEntry("state", "no-round-yet");
      assertThat(none.findings()).singleElement().satisfies(f -> {
        assertThat(f.code()).isEqualTo("replication-no-round-yet");
        assertThat(f.severity()).isEqualTo("info");
        assertThat(f.message()).contains("no replication round of " + id + " to node n2 has ended since");
      });
    }

    waitFor(Duration.ofSeconds(60), () -> !copies("n2", id).isEmpty(), "a copy on n2");
    waitFor(Duration.ofSeconds(30), () -> "ok".equals(at(inspect("n1", id), "layers", "replication", "state")),
        "the owner's replication layer ok");
    Map<String, Object> owner = inspect("n1", id);
    Map<String, Object> copy = object(owner, "layers", "replication", "evidence", "copies", "n2");
    assertThat(at(owner, "layers", "replication", "evidence", "role")).isEqualTo("owner");
    assertThat(at(owner, "layers", "replication", "evidence", "interval_seconds")).isEqualTo("5");
    assertThat((String) copy.get("newest_copy")).matches("repl-[0-9]+");
    assertThat(((Number) copy.get("copy_age_seconds")).longValue()).isBetween(0L, 60L);
    assertThat(at(copy, "last_round", "outcome")).isEqualTo("ok");
    assertThat(findings(owner, "replication-failing")).isEmpty();

    Map<String, Object> replica = inspect("n2", id);
    assertThat(cluster.node("n2").plugin.observability().inspector().inspect(id).known())
        .as("a volume whose replica n2 holds is known there, nothing staged (the HTTP API answers it, not 404)").isTrue();
    Map<String, Object> held = object(replica, "layers", "replication", "evidence");
    assertThat(at(replica, "layers", "replication", "state")).isEqualTo("holds-copy");
    assertThat(held).containsEntry("role", "replica").containsEntry("replica_of", id);
    assertThat((String) held.get("location")).startsWith(cluster.node("n2").data().resolve("replicas/rep-").toString());
    assertThat((String) held.get("newest_copy")).matches("repl-[0-9]+");
    assertThat(Files.exists(Path.of((String) held.get("location"), held.get("newest_copy") + ".img")))
        .as("the copy the replica node names is in the directory it names").isTrue();
    assertThat(at(replica, "layers", "peer_nodes", "n1", "layers", "replication", "evidence", "role"))
        .as("the owner's view, asked from the replica node").isEqualTo("owner");

    assertThat(cluster.metric("n1", "caravan_replication_interval_seconds", "volume=\"" + id + "\""))
        .as("the volume's interval, for the lag alert").isEqualTo(5.0);

    // The replica node goes down: the next round fails, and the owner's chain names the node and the error.
    cluster.stopNode("n2");
    waitFor(Duration.ofSeconds(30), () -> {
      try {
        return cluster.metric("n1", "caravan_replication_failures_total", "node=\"n2\",volume=\"" + id + "\"") > 0;
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }, "a failed round to n2");
    Map<String, Object> failing = inspect("n1", id);
    assertThat(at(failing, "layers", "replication", "state")).isEqualTo("failing");
    Map<String, Object> last = object(failing, "layers", "replication", "evidence", "copies", "n2", "last_round");
    assertThat(last).containsEntry("outcome", "failed");
    String error = (String) last.get("error");
    assertThat(error).contains("n2");
    assertThat(at(failing, "layers", "replication", "evidence", "copies", "n2", "newest_copy"))
        .as("the copy n2 held when it was last reached").matches("repl-[0-9]+");
    assertThat(findings(failing, "replication-failing")).singleElement().satisfies(f -> {
      assertThat((String) f.get("message")).contains("to node n2").contains("failed: " + error)
          .contains("The newest copy there is repl-");
      assertThat((String) f.get("next")).contains("caravan inspect " + id + "  # on node n2");
    });
    System.out.println("the owner's replication layer with n2 down:\n" + Json.pretty(value(failing, "layers", "replication")));
    // Once the copy is older than twice the interval, the failing round is an error: the loss window has grown.
    waitFor(Duration.ofSeconds(30), () -> findings(inspect("n1", id), "replication-failing").stream()
        .anyMatch(f -> f.get("severity").equals("error")), "the failing round an error");
    Map<String, Object> late = inspect("n1", id);
    assertThat(Long.parseLong(at(late, "layers", "replication", "evidence", "copies", "n2", "copy_age_seconds")))
        .as("the copy's age (whole seconds) once the failing round is an error").isGreaterThanOrEqualTo(10);

    cluster.startNode("n2");
    cluster.csi("n1").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(filesBelow("n2", "replicas")).as("the replica goes with the volume").isEmpty();
  }

  private boolean noPartial() {
    try {
      return filesBelow("n2", "replicas").stream().noneMatch(f -> f.endsWith(".partial"));
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
