package dev.caravan.csi.peer;

import static dev.caravan.csi.peer.ReplicationOnLocalTest.dataset;
import static dev.caravan.csi.peer.ReplicationOnLocalTest.snapshotsOf;
import static dev.caravan.csi.peer.ReplicationOnLocalTest.waitFor;
import static dev.caravan.csi.peer.ReplicationOnLocalTest.write;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.GuestCommands;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListSnapshotsResponse;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeContentSource;
import java.io.RandomAccessFile;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * What replication of {@code local} volumes costs and what it protects, measured in the guest and
 * printed (run it alone with --select-class; the guest suite does not select it): the throughput and
 * CPU of a full stream over the peer channel against {@code zfs send | zfs receive} through a pipe,
 * in alternating rounds of one run; Probe and publish latencies on the owner with and without a
 * replication in flight; and, for intervals of 10 s and 1 min, the loss window when the owner is lost
 * (records a writer appended after the newest replica) and the time to restore on the replica node.
 * Every figure comes with the check that what it measured happened: the copy's GUID is its source's,
 * the restored volume holds every record acknowledged before its snapshot, intact and in order.
 */
class ReplicationCostGuestTest {
  private static final long MIB = 1L << 20;
  private static final List<String> NODES = List.of("n1", "n2");
  private static final int STREAM_MIB = 128;
  private static final int THROUGHPUT_ROUNDS = 3;
  private static final int LATENCY_SAMPLES = 100;
  private static final int RECORD = 4096;
  private static final Duration RECORD_EVERY = Duration.ofMillis(100);

  @RegisterExtension
  static final GuestPoolCluster GUEST =
      GuestPoolCluster.withLostNodes(NODES, "the cost of replicating local volumes");

  private static PeerCluster cluster() {
    return GUEST.cluster();
  }

  private static GuestPools pools() {
    return GUEST.pools();
  }

  private static Replicator replicator(String node) {
    return cluster().node(node).plugin.peering().orElseThrow().replicator().orElseThrow();
  }

  private static long processCpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
        .getProcessCpuTime();
  }

  private static String replicaOf(String volumeId) {
    return pools().replicaDataset("n2", volumeId);
  }

  /** Destroys the owner's replication snapshots, which replicate() calls outside a round leave unpruned. */
  private static void destroyReplicationSnapshots(String ds) {
    for (String s : snapshotsOf(ds)) {
      if (s.contains("@repl-")) {
        GuestPools.run("zfs", "destroy", s);
      }
    }
  }

  @Test
  void aFullStreamOverThePeerChannelAgainstZfsSendAndReceiveThroughAPipe() throws Exception {
    Volume v = cluster().csi("n2").createVolume(PeersTest.create("throughput", "n1", 2L * STREAM_MIB * MIB))
        .getVolume();
    String id = v.getVolumeId();
    String ds = dataset(id);
    for (int i = 0; i < STREAM_MIB / 16; i++) {
      write(ds, i * 16L * MIB, (int) (16 * MIB), 100 + i); // random bytes: nothing compresses
    }
    String pipeCopy = pools().pool("n2") + "/" + GuestPools.PARENT + "/pipe-copy";
    List<Double> inSeconds = new ArrayList<>();
    List<Double> inCpu = new ArrayList<>();
    List<Double> pipeSeconds = new ArrayList<>();
    List<Double> pipeCpu = new ArrayList<>();
    long streamBytes = 0;
    try {
      for (int round = 0; round < THROUGHPUT_ROUNDS; round++) {
        long cpu0 = processCpuNanos();
        long t0 = System.nanoTime();
        Replicator.Attempt a = replicator("n1").replicate(id, "n2");
        long t1 = System.nanoTime();
        long cpu1 = processCpuNanos();
        assertThat(a.failure()).as("round %d's full stream over the peer channel", round).isEmpty();
        assertThat(a.bytes()).isGreaterThan(STREAM_MIB * MIB);
        streamBytes = a.bytes();
        String copy = ReplicationOnLocalTest.newestSnapshot(replicaOf(id));
        String source = ds + copy.substring(copy.indexOf('@'));
        assertThat(ReplicationOnLocalTest.get("guid", copy)).isEqualTo(ReplicationOnLocalTest.get("guid", source));
        inSeconds.add((t1 - t0) / 1e9);
        inCpu.add((cpu1 - cpu0) / 1e9);
        assertThat(replicator("n1").deleteReplica(id, "n2")).isTrue();

        long t2 = System.nanoTime();
        String out = GuestCommands.run(Duration.ofMinutes(10), "bash", "-c", "zfs send \"$1\""
            + " | zfs receive -u -o volmode=none \"$2\"; s=(${PIPESTATUS[@]}); times;"
            + " [ \"${s[0]}\" = 0 ] && [ \"${s[1]}\" = 0 ]", "pipe", source, pipeCopy);
        long t3 = System.nanoTime();
        // `times`: the shell's user and system time, then its children's (zfs send and zfs receive).
        String children = out.lines().toList().get(1);
        pipeCpu.add(Arrays.stream(children.split(" ")).mapToDouble(ReplicationCostGuestTest::seconds).sum());
        pipeSeconds.add((t3 - t2) / 1e9);
        String received = pipeCopy + source.substring(source.indexOf('@'));
        assertThat(ReplicationOnLocalTest.get("guid", received)).isEqualTo(ReplicationOnLocalTest.get("guid", source));
        GuestPools.run("zfs", "destroy", received);
        GuestPools.run("zfs", "destroy", pipeCopy);
      }
    } finally {
      if (!snapshotsOf(pipeCopy).isEmpty()) {
        snapshotsOf(pipeCopy).forEach(s -> GuestPools.run("zfs", "destroy", s));
      }
      if (!"-".equals(ReplicationOnLocalTest.getOr("type", pipeCopy, "-"))) {
        GuestPools.run("zfs", "destroy", pipeCopy);
      }
      replicator("n1").deleteReplica(id, "n2");
      destroyReplicationSnapshots(ds);
      cluster().csi("n2").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    }
    // Throughput as the volume's data per second, the same for both: the two streams' framing differs.
    System.out.printf("COST replication, a full copy of %d MiB of data (%.1f MiB on the peer channel), median of %d"
        + " alternating rounds: peer channel %.1f s (%.1f MiB/s, %.1f s CPU of both plugins), zfs send | zfs receive"
        + " %.1f s (%.1f MiB/s, %.1f s CPU); all rounds: peer channel %s s, pipe %s s%n", STREAM_MIB,
        streamBytes / (double) MIB, THROUGHPUT_ROUNDS, median(inSeconds), STREAM_MIB / median(inSeconds),
        median(inCpu), median(pipeSeconds), STREAM_MIB / median(pipeSeconds), median(pipeCpu), inSeconds, pipeSeconds);
  }

  @Test
  void probeAndPublishOnTheOwnerWithAndWithoutAReplicationInFlight() throws Exception {
    Volume big = cluster().csi("n2").createVolume(PeersTest.create("in-flight", "n1", 2L * STREAM_MIB * MIB))
        .getVolume();
    Volume other = cluster().csi("n2").createVolume(PeersTest.create("other", "n1", 64 * MIB)).getVolume();
    String ds = dataset(big.getVolumeId());
    for (int i = 0; i < STREAM_MIB / 16; i++) {
      write(ds, i * 16L * MIB, (int) (16 * MIB), 200 + i);
    }
    NodeGrpc.NodeBlockingStub node = NodeGrpc.newBlockingStub(cluster().node("n1").channel.channel());
    IdentityGrpc.IdentityBlockingStub identity = IdentityGrpc.newBlockingStub(cluster().node("n1").channel.channel());
    VolumeCapability cap = PeersTest.create("x", "n1", MIB).getVolumeCapabilities(0);
    Path staging = Files.createDirectories(cluster().work.resolve("n1-cost/staging"));
    Path target = cluster().work.resolve("n1-cost/target");
    node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(other.getVolumeId())
        .putAllVolumeContext(other.getVolumeContextMap()).setStagingTargetPath(staging.toString())
        .setVolumeCapability(cap).build());
    NodePublishVolumeRequest publish = NodePublishVolumeRequest.newBuilder().setVolumeId(other.getVolumeId())
        .putAllVolumeContext(other.getVolumeContextMap()).setStagingTargetPath(staging.toString())
        .setTargetPath(target.toString()).setVolumeCapability(cap).build();
    NodeUnpublishVolumeRequest unpublish = NodeUnpublishVolumeRequest.newBuilder().setVolumeId(other.getVolumeId())
        .setTargetPath(target.toString()).build();
    Map<Boolean, List<Long>> probes = new LinkedHashMap<>(Map.of(false, new ArrayList<>(), true, new ArrayList<>()));
    Map<Boolean, List<Long>> publishes = new LinkedHashMap<>(Map.of(false, new ArrayList<>(), true, new ArrayList<>()));
    int streams = 0;
    try {
      for (int i = 0; i < 20; i++) { // warm-up, not counted
        identity.probe(ProbeRequest.getDefaultInstance());
        node.nodePublishVolume(publish);
        node.nodeUnpublishVolume(unpublish);
      }
      // Alternating phases: quiet, then with a full stream in flight, until each has its samples.
      while (probes.get(true).size() < LATENCY_SAMPLES || probes.get(false).size() < LATENCY_SAMPLES) {
        for (int i = 0; i < 25; i++) {
          cycle(identity, node, publish, unpublish, probes.get(false), publishes.get(false));
        }
        replicator("n1").deleteReplica(big.getVolumeId(), "n2");
        CompletableFuture<Replicator.Attempt> inFlight =
            CompletableFuture.supplyAsync(() -> replicator("n1").replicate(big.getVolumeId(), "n2"));
        streams++;
        while (!inFlight.isDone()) {
          cycle(identity, node, publish, unpublish, probes.get(true), publishes.get(true));
        }
        assertThat(inFlight.get().failure()).as("the stream in flight").isEmpty();
      }
    } finally {
      node.nodeUnpublishVolume(unpublish);
      node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(other.getVolumeId())
          .setStagingTargetPath(staging.toString()).build());
      replicator("n1").deleteReplica(big.getVolumeId(), "n2");
      destroyReplicationSnapshots(ds);
      cluster().csi("n2").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(big.getVolumeId()).build());
      cluster().csi("n2").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(other.getVolumeId()).build());
    }
    for (boolean busy : new boolean[] {false, true}) {
      System.out.printf("COST replication, on the owner %s: Probe p50 %.2f ms p99 %.2f ms, NodePublishVolume p50 %.2f"
          + " ms p99 %.2f ms (%d samples)%n", busy ? "with a full " + STREAM_MIB + " MiB stream in flight (" + streams
          + " streams)" : "quiet", pct(probes.get(busy), 50), pct(probes.get(busy), 99), pct(publishes.get(busy), 50),
          pct(publishes.get(busy), 99), probes.get(busy).size());
    }
  }

  private static void cycle(IdentityGrpc.IdentityBlockingStub identity, NodeGrpc.NodeBlockingStub node,
      NodePublishVolumeRequest publish, NodeUnpublishVolumeRequest unpublish, List<Long> probes, List<Long> publishes) {
    long t0 = System.nanoTime();
    identity.probe(ProbeRequest.getDefaultInstance());
    long t1 = System.nanoTime();
    node.nodePublishVolume(publish);
    long t2 = System.nanoTime();
    node.nodeUnpublishVolume(unpublish);
    probes.add(t1 - t0);
    publishes.add(t2 - t1);
  }

  @Test
  void theLossWindowAndTheTimeToRestoreAtIntervalsOf10SecondsAnd1Minute() throws Exception {
    // Where in the interval the owner is lost: early, midway and late at 10 s; midway at 1 min.
    List<String> results = new ArrayList<>();
    for (double phase : new double[] {0.1, 0.5, 0.9}) {
      results.add(lossTrial("10s", Duration.ofSeconds(10), phase));
    }
    results.add(lossTrial("1m", Duration.ofMinutes(1), 0.5));
    results.forEach(r -> System.out.println("COST replication, " + r));
  }

  /**
   * A writer appends a checksummed record every {@link #RECORD_EVERY} to a volume replicated at
   * {@code interval}; the owner is lost {@code phase} of an interval after its third round started;
   * the volume is restored on the replica node from its newest copy and read back.
   */
  private String lossTrial(String setting, Duration interval, double phase) throws Exception {
    String trial = setting + "-" + Math.round(phase * 100);
    Volume v = cluster().csi("n2").createVolume(PeersTest.create("loss-" + trial, "n1", 64 * MIB).toBuilder()
        .putParameters("replicas", "1").putParameters("replicationInterval", setting).build()).getVolume();
    long created = System.currentTimeMillis(); // the first round starts at once, then one every interval
    String id = v.getVolumeId();
    String ds = dataset(id);
    Path device = Path.of("/dev/zvol/" + ds);
    waitFor(Duration.ofSeconds(30), () -> Files.exists(device), "the device of " + ds);
    List<Long> acked = new ArrayList<>(); // when each record's synced write returned, by sequence number
    AtomicBoolean stop = new AtomicBoolean();
    CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
      try (RandomAccessFile f = new RandomAccessFile(device.toFile(), "rwd")) {
        for (int seq = 0; !stop.get(); seq++) {
          f.seek((long) seq * RECORD);
          f.write(record(seq, System.currentTimeMillis()));
          synchronized (acked) {
            acked.add(System.currentTimeMillis());
          }
          Thread.sleep(RECORD_EVERY.toMillis());
        }
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    long lostAt = created + 2 * interval.toMillis() + (long) (phase * interval.toMillis());
    Thread.sleep(Math.max(0, lostAt - System.currentTimeMillis()));
    stop.set(true);
    writer.get();
    long lastAcked;
    int written;
    synchronized (acked) {
      written = acked.size();
      lastAcked = acked.getLast();
    }

    cluster().stopNode("n1");
    pools().export("n1");
    GUEST.lost().add("n1");
    String report;
    try {
      long r0 = System.nanoTime();
      List<ListSnapshotsResponse.Entry> listed = cluster().csi("n2").listSnapshots(
          ListSnapshotsRequest.newBuilder().setSourceVolumeId(id).build()).getEntriesList();
      assertThat(listed).as("the copies of %s listed on n2", id).hasSize(1);
      String snapshotId = listed.getFirst().getSnapshot().getSnapshotId();
      long copyTaken = Long.parseLong(snapshotId.substring(snapshotId.lastIndexOf("@repl-") + 6));
      Volume restored = cluster().csi("n2").createVolume(PeersTest.create("restored-" + trial, "auto",
          64 * MIB).toBuilder().setVolumeContentSource(VolumeContentSource.newBuilder().setSnapshot(
              VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snapshotId))).build()).getVolume();
      long r1 = System.nanoTime();
      Path restoredDevice = Path.of("/dev/zvol/" + dataset(restored.getVolumeId()));
      waitFor(Duration.ofSeconds(60), () -> Files.exists(restoredDevice), "the restored volume's device");
      long r2 = System.nanoTime();
      int present = readBack(restoredDevice, written);
      int beforeCopy;
      synchronized (acked) {
        beforeCopy = (int) acked.stream().filter(t -> t < copyTaken).count();
      }
      assertThat(present).as("records in the restored volume (every one acknowledged before its copy was taken)")
          .isGreaterThanOrEqualTo(beforeCopy).isLessThanOrEqualTo(written);
      long lastRestored;
      synchronized (acked) {
        lastRestored = present == 0 ? created : acked.get(present - 1);
      }
      report = String.format("interval %s, owner lost %.0f %% into an interval: %d of %d records restored, loss window"
          + " %.1f s (%d records; the copy was taken %.1f s before the loss), restore %.2f s (ListSnapshots and"
          + " CreateVolume %.2f s, then the device %.2f s)", setting, phase * 100, present, written,
          (lastAcked - lastRestored) / 1e3, written - present, (lastAcked - copyTaken) / 1e3, (r2 - r0) / 1e9,
          (r1 - r0) / 1e9, (r2 - r1) / 1e9);
      cluster().csi("n2").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(restored.getVolumeId()).build());
    } finally {
      GUEST.lost().remove("n1");
      pools().reimport("n1");
      cluster().startNode("n1");
    }
    cluster().csi("n2").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    return report;
  }

  /** Record {@code seq}: its number, its time, seeded random bytes, and the SHA-256 of all that. */
  private static byte[] record(int seq, long millis) throws Exception {
    ByteBuffer b = ByteBuffer.allocate(RECORD);
    b.putLong(seq).putLong(millis);
    byte[] body = new byte[RECORD - 16 - 32];
    new Random(seq).nextBytes(body);
    b.put(body);
    b.put(MessageDigest.getInstance("SHA-256").digest(Arrays.copyOf(b.array(), RECORD - 32)));
    return b.array();
  }

  /**
   * How many records the device holds from the first on, each checked intact and in its place; every
   * block after the last of them, up to {@code written}, must be zeros (nothing torn or out of order).
   */
  private static int readBack(Path device, int written) throws Exception {
    int present = 0;
    try (RandomAccessFile f = new RandomAccessFile(device.toFile(), "r")) {
      byte[] block = new byte[RECORD];
      for (int seq = 0; seq < written; seq++) {
        f.seek((long) seq * RECORD);
        f.readFully(block);
        if (Arrays.equals(block, new byte[RECORD])) {
          break;
        }
        ByteBuffer b = ByteBuffer.wrap(block);
        assertThat(b.getLong()).as("record %d's number", seq).isEqualTo(seq);
        assertThat(Arrays.copyOfRange(block, RECORD - 32, RECORD)).as("record %d's checksum", seq)
            .isEqualTo(MessageDigest.getInstance("SHA-256").digest(Arrays.copyOf(block, RECORD - 32)));
        present++;
      }
      for (int seq = present; seq < written; seq++) {
        f.seek((long) seq * RECORD);
        f.readFully(block);
        assertThat(block).as("block %d, after the last restored record", seq).isEqualTo(new byte[RECORD]);
      }
    }
    return present;
  }

  /** Seconds from bash's {@code times} format, {@code 1m2.345s}. */
  private static double seconds(String s) {
    int m = s.indexOf('m');
    return Integer.parseInt(s.substring(0, m)) * 60 + Double.parseDouble(s.substring(m + 1, s.length() - 1));
  }

  private static double median(List<Double> xs) {
    List<Double> sorted = xs.stream().sorted().toList();
    return sorted.get(sorted.size() / 2);
  }

  private static double pct(List<Long> nanos, int p) {
    long[] sorted = nanos.stream().mapToLong(Long::longValue).sorted().toArray();
    return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)] / 1e6;
  }
}
