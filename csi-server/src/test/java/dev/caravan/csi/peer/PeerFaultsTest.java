package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.support.CrashPoints;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.Volume;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Faults in a three-node plugin on the file backend: an owner killed in the middle of a create, and
 * two creates of one new name sent to two instances at once. (An owner that is down, and a peer
 * restarting while a list pages through, are in {@link PeersTest}.)
 */
class PeerFaultsTest {
  private static final long MIB = 1L << 20;
  private static final long GIB = 1L << 30;
  private static final Set<String> NODES = Set.of("n1", "n2", "n3");

  private PeerCluster cluster;

  @AfterEach
  void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  /** A name, starting with {@code prefix}, whose home is {@code node}. */
  private static String nameCoordinatedBy(String node, String prefix) {
    for (int i = 0; ; i++) {
      if (Coordinator.of(prefix + i, NODES).equals(node)) {
        return prefix + i;
      }
    }
  }

  /** Every volume image and record the nodes hold, as {@code node/file}. */
  private List<String> volumeFiles() throws Exception {
    List<String> out = new ArrayList<>();
    for (String n : List.of("n1", "n2", "n3")) {
      cluster.files(n, "volumes").forEach(f -> out.add(n + "/" + f));
    }
    return out;
  }

  private List<String> images() throws Exception {
    return volumeFiles().stream().filter(f -> f.endsWith(".img")).toList();
  }

  /** The name claims {@code node} keeps as a home. */
  private List<String> claims(String node) throws Exception {
    Path dir = cluster.node(node).data().resolve("peer/claims");
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).toList();
    }
  }

  @Test
  void anOwnerKilledMidCreateFinishesTheVolumeOnceBackAndNoOtherNodeMakesOne() throws Exception {
    // n3 has the most room (no reserve) until it has promised a volume: then n1 and n2 have more.
    Map<String, Long> reserves = new LinkedHashMap<>();
    reserves.put("n1", 512 * MIB);
    reserves.put("n2", 512 * MIB);
    reserves.put("n3", 0L);
    cluster = PeerCluster.start(reserves);
    cluster.stopNode("n3");
    cluster.startProcess("n3", Optional.of("create.after-record"));
    String name = nameCoordinatedBy("n1", "killed-");
    CreateVolumeRequest req = PeersTest.create(name, "auto", GIB);

    // Sent to n2; n1 places it on n3, which dies having recorded the volume but made no image.
    StatusRuntimeException lost = GrpcOutcomes.error(() -> cluster.csi("n2").createVolume(req));
    assertThat(lost.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(lost.getStatus().getDescription()).contains("node n3");
    assertThat(cluster.awaitExit("n3")).isEqualTo(CrashPoints.EXIT_STATUS);
    assertThat(images()).isEmpty();
    assertThat(volumeFiles()).isNotEmpty().allMatch(f -> f.startsWith("n3/"));
    assertThat(claims("n1")).hasSize(1);

    // While n3 is down, a retry anywhere waits for it rather than making the volume elsewhere.
    StatusRuntimeException down = GrpcOutcomes.error(() -> cluster.csi("n1").createVolume(req));
    assertThat(down.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(down.getStatus().getDescription()).contains("node n3");
    assertThat(images()).isEmpty();

    cluster.startNode("n3");
    Volume made = cluster.csi("n2").createVolume(req).getVolume();
    assertThat(PeersTest.nodeOf(made)).isEqualTo("n3");
    assertThat(images()).containsExactly("n3/" + made.getVolumeId() + ".img");
    assertThat(volumeFiles()).allMatch(f -> f.startsWith("n3/")).noneMatch(f -> f.contains("partial"));
    assertThat(Files.size(cluster.node("n3").data().resolve("volumes").resolve(made.getVolumeId() + ".img")))
        .isEqualTo(GIB);
    assertThat(cluster.csi("n3").createVolume(req).getVolume()).isEqualTo(made);
    // The claim stays: every later create of the name goes to n3, the volume's owner.
    assertThat(claims("n1")).hasSize(1);
    // By free space alone a new volume now goes elsewhere: the claim, not luck, sent the retry to n3.
    Volume next = cluster.csi("n3").createVolume(PeersTest.create("next", "auto", GIB)).getVolume();
    // (n1 or n2: they tie but for the shared filesystem's free bytes, read a moment apart.)
    assertThat(PeersTest.nodeOf(next)).isIn("n1", "n2");
  }

  @Test
  void twoCreatesOfOneNewNameSentToTwoInstancesAtOnceMakeOneVolume() throws Exception {
    cluster = PeerCluster.start("n1", "n2", "n3");
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      for (int round = 0; round < 6; round++) {
        // Two different hosts: without one place that decides, each instance would make its own.
        String name = "race-" + round;
        CountDownLatch go = new CountDownLatch(1);
        Callable<Object> viaN1 = () -> {
          go.await();
          return outcome(() -> cluster.csi("n1").createVolume(PeersTest.create(name, "n2", 16 * MIB)).getVolume());
        };
        Callable<Object> viaN3 = () -> {
          go.await();
          return outcome(() -> cluster.csi("n3").createVolume(PeersTest.create(name, "n3", 16 * MIB)).getVolume());
        };
        Future<Object> a = pool.submit(viaN1);
        Future<Object> b = pool.submit(viaN3);
        go.countDown();
        List<Object> outcomes = List.of(a.get(), b.get());
        assertThat(outcomes).filteredOn(o -> o instanceof Volume).hasSize(1);
        assertThat(outcomes).filteredOn(o -> o == Status.Code.ALREADY_EXISTS).hasSize(1);
        Volume v = (Volume) outcomes.stream().filter(o -> o instanceof Volume).findFirst().orElseThrow();
        // File ids are <name's id>.<node>: one image of that name on any node.
        String named = v.getVolumeId().substring(0, v.getVolumeId().lastIndexOf('.') + 1);
        assertThat(images()).as("images of %s", v.getVolumeId()).filteredOn(f -> f.contains("/" + named)).hasSize(1);

        // The same, both with host=auto: both answer with the one volume.
        String auto = "auto-race-" + round;
        CountDownLatch start = new CountDownLatch(1);
        Callable<Object> one = () -> {
          start.await();
          return outcome(() -> cluster.csi("n1").createVolume(PeersTest.create(auto, "auto", 16 * MIB)).getVolume());
        };
        Callable<Object> two = () -> {
          start.await();
          return outcome(() -> cluster.csi("n2").createVolume(PeersTest.create(auto, "auto", 16 * MIB)).getVolume());
        };
        Future<Object> c = pool.submit(one);
        Future<Object> d = pool.submit(two);
        start.countDown();
        assertThat(c.get()).isInstanceOf(Volume.class).isEqualTo(d.get());
      }
      assertThat(images()).hasSize(12);
    } finally {
      pool.shutdownNow();
    }
  }

  /** The call's answer, or its status code. */
  private static Object outcome(Callable<Volume> call) {
    try {
      return call.call();
    } catch (StatusRuntimeException e) {
      return e.getStatus().getCode();
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }
}
