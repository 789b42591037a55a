package dev.caravan.csi.peer;

import static dev.caravan.csi.peer.ChainJson.at;
import static dev.caravan.csi.peer.ChainJson.inspect;
import static dev.caravan.csi.peer.ChainJson.object;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.observe.metrics.Metrics;
import dev.caravan.csi.peer.v1.ReplicateAnswer;
import dev.caravan.csi.peer.v1.ReplicateChunk;
import dev.caravan.csi.peer.v1.ReplicateHeader;
import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListSnapshotsResponse;
import dev.caravan.csi.v1.Snapshot;
import dev.caravan.csi.v1.VolumeContentSource;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import dev.caravan.csi.v1.Volume;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Clock;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Replication of {@code local} volumes between two plugin instances in the guest of {@code
 * scripts/guest-suite}, each on a ZFS pool of its own ({@link GuestPools}), peers on loopback mTLS. The
 * {@code zfs} command is the oracle: which pool holds what, and the GUID of every snapshot (a received
 * snapshot has its source's GUID). One cluster serves every test, to keep the guest's time down.
 */
class ReplicationOnLocalTest {
  private static final long MIB = 1L << 20;
  private static final List<String> NODES = List.of("n1", "n2");

  // n2's view of its peers leaves out a lost node, as discovery drops it.
  @RegisterExtension
  static final GuestPoolCluster GUEST = GuestPoolCluster.withLostNodes(NODES, "replication of local volumes");
  private static GuestPools pools;
  private static PeerCluster cluster;

  @BeforeAll
  static void start() {
    pools = GUEST.pools();
    cluster = GUEST.cluster();
  }

  static String dataset(String volumeId) {
    String rest = volumeId.substring("local/v1/".length());
    return rest.substring(rest.indexOf('/') + 1);
  }

  static Replicator replicator(String node) {
    return cluster.node(node).plugin.peering().orElseThrow().replicator().orElseThrow();
  }

  /** Writes {@code bytes} of seeded random data at {@code offset} of the zvol's device, synced. */
  static void write(String dataset, long offset, int bytes, long seed) throws Exception {
    Path device = Path.of("/dev/zvol/" + dataset);
    waitFor(Duration.ofSeconds(30), () -> Files.exists(device), "the device of " + dataset);
    byte[] data = new byte[bytes];
    new Random(seed).nextBytes(data);
    try (RandomAccessFile f = new RandomAccessFile(device.toFile(), "rw")) {
      f.seek(offset);
      f.write(data);
      f.getFD().sync();
    }
  }

  /** SHA-256 of the first {@code bytes} of the zvol's device. */
  static String digest(String dataset, int bytes) throws Exception {
    Path device = Path.of("/dev/zvol/" + dataset);
    waitFor(Duration.ofSeconds(30), () -> Files.exists(device), "the device of " + dataset);
    byte[] data = new byte[bytes];
    try (RandomAccessFile f = new RandomAccessFile(device.toFile(), "r")) {
      f.readFully(data);
    }
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
  }

  /**
   * Polls twice a second: each poll runs zfs, and a process start is costly in the emulated guest,
   * where it competes with the replication it waits for.
   */
  static void waitFor(Duration bound, BooleanSupplier condition, String what) throws InterruptedException {
    long end = System.nanoTime() + bound.toNanos();
    while (!condition.getAsBoolean()) {
      if (System.nanoTime() > end) {
        throw new AssertionError("waited " + bound + " for " + what);
      }
      Thread.sleep(500);
    }
  }

  /** The snapshots of {@code dataset}; none while it does not exist. */
  static List<String> snapshotsOf(String dataset) {
    try {
      return GuestPools.run("zfs", "list", "-H", "-o", "name", "-t", "snapshot", dataset).lines().toList();
    } catch (AssertionError e) {
      return List.of();
    }
  }

  /** {@code zfs get} of a property, or {@code absent} while the dataset does not exist. */
  static String getOr(String property, String dataset, String absent) {
    try {
      return get(property, dataset);
    } catch (AssertionError e) {
      return absent;
    }
  }

  /** The replica datasets below node's parent dataset. */
  static List<String> replicas(String node) {
    return pools.objects(node).stream().filter(o -> o.contains("/rep-") && !o.contains("@")).toList();
  }

  static String get(String property, String dataset) {
    return GuestPools.run("zfs", "get", "-H", "-o", "value", property, dataset);
  }

  /** The ids of the snapshots {@code node} lists as copies of volume {@code volumeId}. */
  static List<String> replicaSnapshotIds(String node, String volumeId) {
    return cluster.csi(node).listSnapshots(ListSnapshotsRequest.newBuilder().setSourceVolumeId(volumeId).build())
        .getEntriesList().stream().map(e -> e.getSnapshot().getSnapshotId()).toList();
  }

  /** The snapshot id {@code node} gives the ZFS snapshot {@code snapshot}. */
  static String snapshotIdOf(String node, String snapshot) {
    return "local/v1/" + node + "/" + snapshot;
  }

  /** The newest snapshot of {@code dataset}, by creation. */
  static String newestSnapshot(String dataset) {
    String out = GuestPools.run("zfs", "list", "-H", "-o", "name", "-t", "snapshot", "-s", "createtxg", dataset);
    List<String> lines = out.lines().toList();
    return lines.getLast();
  }

  /** The lines of {@code node}'s metrics that start with {@code prefix}. */
  static List<String> metricLines(String node, String prefix) throws IOException {
    java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
    ((dev.caravan.csi.observe.metrics.PrometheusMetrics) cluster.node(node).plugin.observability().metrics()).write(out);
    return out.toString(java.nio.charset.StandardCharsets.UTF_8).lines().filter(l -> l.startsWith(prefix)).toList();
  }

  /** n1's failed rounds to the replica {@code labels} name. */
  static double failures(String labels) {
    return n1Counter("caravan_replication_failures_total", labels);
  }

  /** Bytes n1 counts as sent to the replica {@code labels} name. */
  static double sent(String labels) {
    return n1Counter("caravan_replication_sent_bytes_total", labels);
  }

  private static double n1Counter(String name, String labels) {
    try {
      return cluster.metric("n1", name, labels);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** An output that stops after {@code limit} bytes until {@code go} opens: the test kills a node meanwhile. */
  static final class PauseAfter extends FilterOutputStream {
    private final CountDownLatch paused;
    private final CountDownLatch go;
    private long left;

    PauseAfter(OutputStream out, long limit, CountDownLatch paused, CountDownLatch go) {
      super(out);
      this.left = limit;
      this.paused = paused;
      this.go = go;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      if (left >= 0 && len > left) {
        out.write(b, off, (int) left);
        off += (int) left;
        len -= (int) left;
        left = -1;
        out.flush();
        paused.countDown();
        try {
          go.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted while paused", e);
        }
      } else if (left >= 0) {
        left -= len;
      }
      out.write(b, off, len);
    }
  }

  /** SHA-256 of {@code bytes} of the seeded random data {@link #write} writes. */
  static String digestOf(int bytes, long seed) throws Exception {
    byte[] data = new byte[bytes];
    new Random(seed).nextBytes(data);
    return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
  }

  /** The owner's replication snapshots of {@code dataset} (taken by replication: repl-<13 digits>). */
  static List<String> replicationSnapshots(String dataset) {
    return snapshotsOf(dataset).stream().filter(s -> s.matches(".*@repl-[0-9]{13,}")).toList();
  }

  /** What {@code caller}'s certificate gets from {@code node} for a Replicate stream of {@code volumeId}. */
  static Throwable replicateAs(String caller, String node, String volumeId) throws Exception {
    PeerCluster.Node target = cluster.node(node);
    try (PeerClient c = new PeerClient(node, target.address(), PeerCa.open(cluster.node(caller).tls()),
        Duration.ofMinutes(3), new RefusalLog(caller, Metrics.NONE, Clock.systemUTC()))) {
      CompletableFuture<Throwable> ended = new CompletableFuture<>();
      StreamObserver<ReplicateChunk> requests = c.streaming(Duration.ofMinutes(3)).replicate(
          new StreamObserver<ReplicateAnswer>() {
            @Override
            public void onNext(ReplicateAnswer value) {}

            @Override
            public void onError(Throwable t) {
              ended.complete(t);
            }

            @Override
            public void onCompleted() {
              ended.complete(new AssertionError("the stream was accepted"));
            }
          });
      requests.onNext(ReplicateChunk.newBuilder().setHeader(ReplicateHeader.newBuilder().setIdempotencyKey("k-1")
          .setVolumeId(volumeId).setSnapshot("repl-1796439394035").setKind(ReplicateHeader.Kind.FULL)).build());
      requests.onCompleted();
      return ended.get(3, TimeUnit.MINUTES);
    }
  }

  @Test
  void aCutStreamResumesThenIncrementalsFollowAndTheReplicaGoesOnlyWithItsDeletion() throws Exception {
    Volume v = cluster.csi("n2").createVolume(PeersTest.create("replicated", "n1", 64 * MIB)).getVolume();
    String id = v.getVolumeId();
    String ds = dataset(id);
    write(ds, 0, (int) (8 * MIB), 1);

    Replicator.Attempt cut = replicator("n1").replicate(id, "n2", out -> new CutAfter(out, 2 * MIB));
    assertThat(cut.failure()).as("the cut attempt's failure").isPresent();
    String replica = replicaOf(id);
    waitFor(Duration.ofSeconds(30), () -> !getOr("receive_resume_token", replica, "-").equals("-"),
        "a resumable partial receive on n2");

    Replicator.Attempt resumed = replicator("n1").replicate(id, "n2");
    assertThat(resumed.failure()).as("the resumed attempt's failure").isEmpty();
    assertThat(get("receive_resume_token", replica)).isEqualTo("-");
    String onReplica = newestSnapshot(replica);
    String name = onReplica.substring(onReplica.indexOf('@') + 1);
    assertThat(name).startsWith("repl-");
    assertThat(get("guid", onReplica)).isEqualTo(get("guid", ds + "@" + name));
    assertThat(get("readonly", replica)).isEqualTo("on");
    assertThat(get("volmode", replica)).isEqualTo("none");
    assertThat(get("caravan:replica-of", replica)).isEqualTo(id);

    write(ds, 30 * MIB, (int) MIB, 2);
    Replicator.Attempt incremental = replicator("n1").replicate(id, "n2");
    assertThat(incremental.failure()).isEmpty();
    assertThat(incremental.bytes()).as("an incremental's bytes").isLessThan(4 * MIB);
    String newest = newestSnapshot(replica);
    assertThat(newest).isNotEqualTo(onReplica);
    assertThat(get("guid", newest)).isEqualTo(get("guid", ds + newest.substring(newest.indexOf('@'))));
    assertThat(pools.objects("n2").stream().filter(o -> o.startsWith(replica + "@")).toList())
        .as("the replica keeps only its newest replication snapshot").containsExactly(newest);

    // The receiving plugin stopped mid-stream: n2's plugin shuts down with an incremental half received (in
    // process: a forked plugin JVM takes minutes to start in the emulated guest). The partial receive is kept;
    // once n2 is back, the next round sends only its rest, then an incremental.
    write(ds, 40 * MIB, (int) (4 * MIB), 4);
    CountDownLatch paused = new CountDownLatch(1);
    CountDownLatch go = new CountDownLatch(1);
    CompletableFuture<Replicator.Attempt> killed;
    try {
      killed = CompletableFuture.supplyAsync(
          () -> replicator("n1").replicate(id, "n2", out -> new PauseAfter(out, 2 * MIB, paused, go)));
      assertThat(paused.await(3, TimeUnit.MINUTES)).as("2 MiB of the stream sent").isTrue();
      Thread.sleep(1000); // the receiver takes what flow control let through
      cluster.stopNode("n2");
    } finally {
      go.countDown();
      if (cluster.node("n2").plugin == null) {
        cluster.startNode("n2");
      }
    }
    assertThat(killed.get(3, TimeUnit.MINUTES).failure()).as("the attempt whose receiver stopped").isPresent();
    waitFor(Duration.ofSeconds(30), () -> !getOr("receive_resume_token", replica, "-").equals("-"),
        "a resumable partial receive on n2 after its plugin stopped");
    Replicator.Attempt afterKill = replicator("n1").replicate(id, "n2");
    assertThat(afterKill.failure()).as("the round after n2's restart").isEmpty();
    assertThat(get("receive_resume_token", replica)).as("no partial receive left").isEqualTo("-");
    String afterKillNewest = newestSnapshot(replica);
    assertThat(pools.objects("n2").stream().filter(o -> o.startsWith(replica)).toList())
        .as("the replica and its one newest snapshot, nothing half received").containsExactly(replica, afterKillNewest);
    assertThat(get("guid", afterKillNewest))
        .isEqualTo(get("guid", ds + afterKillNewest.substring(afterKillNewest.indexOf('@'))));

    // The owner loses every replication snapshot (destroyed by hand): only a full stream can bring the copy up
    // to date. It is received beside the copy, which stays whole and listed until the new one is: a full stream
    // cut in the middle leaves the copy as it was, and the next round resumes the refresh.
    String kept = newestSnapshot(replica);
    String keptGuid = get("guid", kept);
    for (String own : snapshotsOf(ds)) {
      GuestPools.run("zfs", "destroy", own);
    }
    write(ds, 20 * MIB, (int) (4 * MIB), 7);
    String refresh = replica + "-b";
    Replicator.Attempt cutRefresh = replicator("n1").replicate(id, "n2", out -> new CutAfter(out, 2 * MIB));
    assertThat(cutRefresh.failure()).as("a full refresh cut in the middle").isPresent();
    waitFor(Duration.ofSeconds(30), () -> !getOr("receive_resume_token", refresh, "-").equals("-"),
        "the refresh's resumable partial receive beside the copy");
    assertThat(newestSnapshot(replica)).as("the copy, kept whole during the refresh").isEqualTo(kept);
    assertThat(get("guid", kept)).isEqualTo(keptGuid);
    assertThat(replicaSnapshotIds("n2", id)).as("the copy a restore starts from, during the refresh")
        .containsExactly(snapshotIdOf("n2", kept));

    Replicator.Attempt refreshed = replicator("n1").replicate(id, "n2");
    assertThat(refreshed.failure()).as("the round that resumes the refresh").isEmpty();
    String fresh = newestSnapshot(refresh);
    assertThat(get("guid", fresh)).as("the refreshed copy is the owner's newest replication snapshot")
        .isEqualTo(get("guid", ds + fresh.substring(fresh.indexOf('@'))));
    assertThat(get("receive_resume_token", refresh)).isEqualTo("-");
    assertThat(get("caravan:replica-of", refresh)).isEqualTo(id);
    assertThat(pools.objects("n2").stream().filter(o -> o.startsWith(replica)).toList())
        .as("the old copy destroyed once the new one was whole").containsExactly(refresh, fresh);
    assertThat(replicaSnapshotIds("n2", id)).containsExactly(snapshotIdOf("n2", fresh));

    // Incrementals follow into the refreshed copy; a refresh of that one goes back into the first name.
    write(ds, 24 * MIB, (int) MIB, 8);
    Replicator.Attempt afterRefresh = replicator("n1").replicate(id, "n2");
    assertThat(afterRefresh.failure()).isEmpty();
    assertThat(afterRefresh.bytes()).as("an incremental onto the refreshed copy").isLessThan(4 * MIB);
    String next = newestSnapshot(refresh);
    assertThat(get("guid", next)).isEqualTo(get("guid", ds + next.substring(next.indexOf('@'))));
    for (String own : snapshotsOf(ds)) {
      GuestPools.run("zfs", "destroy", own);
    }
    assertThat(replicator("n1").replicate(id, "n2").failure()).as("a second refresh").isEmpty();
    String back = newestSnapshot(replica);
    assertThat(get("guid", back)).isEqualTo(get("guid", ds + back.substring(back.indexOf('@'))));
    assertThat(pools.objects("n2").stream().filter(o -> o.startsWith(replica)).toList())
        .as("the second refresh back in the first name, the other one destroyed").containsExactly(replica, back);

    // Only the owner's certificate acts on a replica: n2 asking n1 about a volume of a third node is refused.
    String notN2s = id.replace("local/v1/n1/", "local/v1/n3/");
    Replicator.Attempt foreign = replicator("n2").replicate(notN2s, "n1");
    assertThat(foreign.failure()).get().satisfies(f ->
        assertThat(Status.fromThrowable(f).getCode()).isEqualTo(Status.Code.PERMISSION_DENIED));

    assertThat(replicateAs("n2", "n1", notN2s)).satisfies(f ->
        assertThat(Status.fromThrowable(f).getCode()).as("Replicate with n2's certificate for n3's volume")
            .isEqualTo(Status.Code.PERMISSION_DENIED));
    assertThat(org.assertj.core.api.Assertions.catchThrowable(() -> replicator("n2").deleteReplica(notN2s, "n1")))
        .satisfies(f -> assertThat(Status.fromThrowable(f).getCode())
            .as("DeleteReplica with n2's certificate for n3's volume").isEqualTo(Status.Code.PERMISSION_DENIED));

    // The owner's pool full (a quota on its parent dataset leaves no room for the snapshot of the data written
    // since the last one, which the zvol's reservation must cover again): the round fails naming the cause,
    // nothing is left behind on either side, and the volume takes writes as before.
    String parent = pools.pool("n1") + "/" + GuestPools.PARENT;
    write(ds, 0, (int) (4 * MIB), 5); // 4 MiB written since the last snapshot: its snapshot needs that room
    List<String> ownerBefore = snapshotsOf(ds);
    List<String> replicaBefore = pools.objects("n2");
    GuestPools.run("zfs", "set", "quota=" + (GuestPools.numeric("used", parent) + MIB), parent);
    try {
      Replicator.Attempt noRoom = replicator("n1").replicate(id, "n2");
      assertThat(noRoom.failure()).as("a round with the owner's pool full").get().satisfies(f -> {
        assertThat(f).isInstanceOf(CsiException.class);
        assertThat(((CsiException) f).kind()).isEqualTo(CsiException.Kind.RESOURCE_EXHAUSTED);
        assertThat(f.getMessage()).contains("no room for the replication snapshot of " + id).contains(ds);
      });
      assertThat(noRoom.bytes()).isZero();
      assertThat(snapshotsOf(ds)).as("the owner's snapshots after the round").isEqualTo(ownerBefore);
      assertThat(pools.objects("n2")).as("the replica node's datasets after the round").isEqualTo(replicaBefore);
      write(ds, 0, (int) MIB, 6);
      assertThat(digest(ds, (int) MIB)).as("a write to the volume with its pool full").isEqualTo(digestOf((int) MIB, 6));
    } finally {
      GuestPools.run("zfs", "set", "quota=none", parent);
    }

    assertThat(replicator("n1").deleteReplica(id, "n2")).isTrue();
    assertThat(replicas("n2")).isEmpty();
    cluster.csi("n2").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
  }

  @Test
  void aReplicatedVolumeIsRestoredOnItsReplicaNodeAfterTheOwnerIsLost() throws Exception {
    CreateVolumeRequest tooMany = PeersTest.create("protected", "n1", 64 * MIB).toBuilder()
        .putParameters("replicas", "2").build();
    assertThat(GrpcOutcomes.code(() -> cluster.csi("n2").createVolume(tooMany)))
        .isEqualTo(Status.Code.INVALID_ARGUMENT);
    CreateVolumeRequest ownNode = PeersTest.create("protected", "n1", 64 * MIB).toBuilder()
        .putParameters("replicas", "1").putParameters("replicaNodes", "n1").build();
    assertThat(GrpcOutcomes.code(() -> cluster.csi("n2").createVolume(ownNode)))
        .isEqualTo(Status.Code.INVALID_ARGUMENT);

    CreateVolumeRequest req = PeersTest.create("protected", "n1", 64 * MIB).toBuilder()
        .putParameters("replicas", "1").putParameters("replicationInterval", "5s").build();
    Volume v = cluster.csi("n2").createVolume(req).getVolume();
    String id = v.getVolumeId();
    String ds = dataset(id);
    assertThat(get("caravan:replica-nodes", ds)).isEqualTo("n2");
    // Someone's own snapshot under a name like replication's: never pruned, and it keeps the volume from deletion.
    String byHand = ds + "@repl-1";
    GuestPools.run("zfs", "snapshot", byHand);
    write(ds, 0, (int) (4 * MIB), 3);
    long written = System.currentTimeMillis();
    String before = digest(ds, (int) (4 * MIB));

    // A replica snapshot taken after the write: its name is the owner's clock when it was taken.
    String replica = replicaOf(id);
    waitFor(Duration.ofSeconds(60), () -> snapshotsOf(replica).stream()
        .anyMatch(s -> Long.parseLong(s.substring(s.indexOf("@repl-") + 6)) > written), "a replica newer than the write");
    assertThat(pools.objects("n1").stream().filter(o -> o.startsWith(ds + "@") && !o.equals(byHand)).count())
        .as("the owner's replication snapshots after pruning").isLessThanOrEqualTo(2);
    assertThat(pools.objects("n1")).as("a snapshot replication did not take").contains(byHand);
    assertThat(cluster.csi("n1").listSnapshots(ListSnapshotsRequest.newBuilder().build()).getEntriesList().stream()
        .filter(e -> e.getSnapshot().getSnapshotId().startsWith(id + "@")).toList())
        .as("the owner's replication snapshots are not the volume's CSI snapshots").isEmpty();

    // caravan inspect on both sides: the owner names the copy on n2 and its round; n2 names the dataset holding it.
    waitFor(Duration.ofSeconds(30), () -> "ok".equals(at(inspect(cluster, "n1", id), "layers", "replication", "state")),
        "the owner's replication layer ok");
    Map<String, Object> owner = inspect(cluster, "n1", id);
    assertThat(at(owner, "layers", "replication", "evidence", "role")).isEqualTo("owner");
    assertThat(at(owner, "layers", "replication", "evidence", "interval_seconds")).isEqualTo("5");
    assertThat(at(owner, "layers", "replication", "evidence", "copies", "n2", "newest_copy")).matches("repl-[0-9]+");
    assertThat(at(owner, "layers", "replication", "evidence", "copies", "n2", "last_round", "outcome")).isEqualTo("ok");
    Map<String, Object> held = object(inspect(cluster, "n2", id), "layers", "replication");
    assertThat(held).containsEntry("state", "holds-copy");
    assertThat(object(held, "evidence")).containsEntry("role", "replica").containsEntry("replica_of", id)
        .containsEntry("location", replica).containsEntry("receive_waiting_to_resume", false);
    // A round may end between the two reads and replace the copy: read both again until they agree.
    waitFor(Duration.ofSeconds(20), () -> snapshotsOf(replica).contains(
        replica + "@" + at(inspect(cluster, "n2", id), "layers", "replication", "evidence", "newest_copy")),
        "zfs listing the copy n2's inspector names");

    String labels = "node=\"n2\",volume=\"" + id + "\""; // the exposition sorts labels by name
    // A round counts its bytes once the receiver has answered, a moment after the replica shows on n2.
    waitFor(Duration.ofSeconds(30), () -> sent(labels) >= 4 * MIB, "4 MiB counted as sent to n2");
    assertThat(metricLines("n1", "caravan_replication_lag_seconds{" + labels + "} "))
        .as("n2's replica's age").singleElement().satisfies(l ->
            assertThat(Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).isBetween(0.0, 60.0));

    // The replica node is down for several intervals: every round fails, counted and logged naming the node,
    // and the owner takes no snapshot meanwhile. Back up, the copy is brought up to date incrementally.
    double failedBefore = cluster.metric("n1", "caravan_replication_failures_total", labels);
    double sentBefore = sent(labels);
    long down;
    try (CapturedLog log = new CapturedLog()) {
      cluster.stopNode("n2");
      try {
        write(ds, 8 * MIB, (int) MIB, 4);
        waitFor(Duration.ofSeconds(90), () -> failures(labels) >= failedBefore + 1, "a failed round");
        down = System.currentTimeMillis(); // every round from here on fails before it takes a snapshot
        waitFor(Duration.ofSeconds(90), () -> failures(labels) >= failedBefore + 3, "three failed rounds");
        assertThat(log.matching("WARNING", "replication of " + id + " to node n2 failed"))
            .as("the owner's log while n2 is down").hasSizeGreaterThanOrEqualTo(3);
        assertThat(replicationSnapshots(ds)).as("the owner's replication snapshots while n2 is down")
            .hasSizeLessThanOrEqualTo(2)
            .allSatisfy(s -> assertThat(Long.parseLong(s.substring(s.indexOf("@repl-") + 6))).isLessThan(down));
      } finally {
        cluster.startNode("n2");
      }
    }
    waitFor(Duration.ofSeconds(90), () -> snapshotsOf(replica).stream()
        .anyMatch(s -> Long.parseLong(s.substring(s.indexOf("@repl-") + 6)) > down), "a replica newer than the outage");
    waitFor(Duration.ofSeconds(30), () -> sent(labels) > sentBefore, "the round after the outage counted");
    double sentAfter = sent(labels) - sentBefore;
    assertThat(sentAfter).as("bytes sent to bring n2 up to date after the outage (1 MiB written)")
        .isGreaterThan(0).isLessThan(4 * MIB);
    assertThat(replicationSnapshots(ds).size()).as("the owner's replication snapshots after the outage")
        .isLessThanOrEqualTo(2);

    // The owner is lost: its plugin stops and its pool is gone; discovery no longer lists it.
    cluster.stopNode("n1");
    pools.export("n1");
    GUEST.lost().add("n1");
    try {
      List<ListSnapshotsResponse.Entry> listed = cluster.csi("n2").listSnapshots(
          ListSnapshotsRequest.newBuilder().setSourceVolumeId(id).build()).getEntriesList();
      assertThat(listed).hasSize(1);
      Snapshot replicaSnapshot = listed.getFirst().getSnapshot();
      assertThat(replicaSnapshot.getSnapshotId()).startsWith("local/v1/n2/");
      assertThat(replicaSnapshot.getReadyToUse()).isTrue();

      Volume restored = cluster.csi("n2").createVolume(PeersTest.create("restored", "auto", 64 * MIB).toBuilder()
          .setVolumeContentSource(VolumeContentSource.newBuilder().setSnapshot(
              VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(replicaSnapshot.getSnapshotId())))
          .build()).getVolume();
      assertThat(PeersTest.nodeOf(restored)).isEqualTo("n2");
      assertThat(digest(dataset(restored.getVolumeId()), (int) (4 * MIB)))
          .as("the restored volume holds every byte written before the replica's snapshot").isEqualTo(before);
      cluster.csi("n2").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(restored.getVolumeId()).build());
    } finally {
      GUEST.lost().remove("n1");
      pools.reimport("n1");
      cluster.startNode("n1");
    }

    assertThat(pools.objects("n1")).as("a snapshot replication did not take, after the restart").contains(byHand);
    // Rounds since the restart went through: the owner prunes past the snapshot it did not take.
    assertThat(pools.objects("n1").stream().filter(o -> o.startsWith(ds + "@") && !o.equals(byHand)).count())
        .as("the owner's replication snapshots after the restart's rounds").isLessThanOrEqualTo(2);
    io.grpc.StatusRuntimeException refused = GrpcOutcomes.error(() -> cluster.csi("n2").deleteVolume(
        DeleteVolumeRequest.newBuilder().setVolumeId(id).build()));
    assertThat(refused.getStatus().getCode()).as("DeleteVolume of a volume with a snapshot made by hand")
        .isEqualTo(Status.Code.FAILED_PRECONDITION);
    assertThat(refused.getStatus().getDescription()).contains("has snapshots").contains("repl-1");
    assertThat(pools.objects("n1")).as("DeleteVolume refused: nothing destroyed").contains(ds, byHand);
    GuestPools.run("zfs", "destroy", byHand);
    cluster.csi("n2").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(replicas("n2")).as("the replica goes with its volume").isEmpty();
  }

  /**
   * A volume deleted while its replica node is down keeps its copy there; a volume made again under its
   * name has its id, and must not take that copy for its own: its CreateVolume has the copy destroyed,
   * and the copy its first round makes holds the new volume's snapshot.
   */
  @Test
  void aVolumeMadeAgainUnderADeletedOnesNameNeverHasTheDeletedOnesCopy() throws Exception {
    CreateVolumeRequest req = PeersTest.create("made-again", "n1", 16 * MIB).toBuilder()
        .putParameters("replicas", "1").putParameters("replicationInterval", "1h").build();
    String id = cluster.csi("n2").createVolume(req).getVolume().getVolumeId();
    String replica = replicaOf(id);
    write(dataset(id), 0, (int) MIB, 21);
    waitFor(Duration.ofMinutes(2), () -> !snapshotsOf(replica).isEmpty(), "the first copy on n2");
    String oldGuid = get("guid", newestSnapshot(replica));

    cluster.stopNode("n2");
    try {
      cluster.csi("n1").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    } finally {
      cluster.startNode("n2");
    }
    assertThat(get("guid", newestSnapshot(replica))).as("the deleted volume's copy, kept while n2 was down")
        .isEqualTo(oldGuid);

    assertThat(cluster.csi("n2").createVolume(req).getVolume().getVolumeId()).as("the same name's id").isEqualTo(id);
    waitFor(Duration.ofMinutes(2), () -> !replicationSnapshots(dataset(id)).isEmpty()
        && snapshotsOf(replica).stream().anyMatch(s -> !getOr("guid", s, oldGuid).equals(oldGuid)),
        "the new volume's first copy on n2");
    String copy = newestSnapshot(replica);
    assertThat(snapshotsOf(replica)).as("n2's copy: the new volume's only").containsExactly(copy);
    String source = dataset(id) + copy.substring(copy.indexOf('@'));
    assertThat(get("guid", copy)).as("the copy's GUID: its source's on n1").isEqualTo(get("guid", source));

    cluster.csi("n1").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    waitFor(Duration.ofSeconds(30), () -> !replicas("n2").contains(replica), "the copy gone with its volume");
  }

  /** The replica dataset of {@code volumeId} on n2. */
  static String replicaOf(String volumeId) {
    return pools.replicaDataset("n2", volumeId);
  }

}
