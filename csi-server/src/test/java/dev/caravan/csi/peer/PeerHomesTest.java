package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.Volume;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Each volume name has a home ({@link Coordinator}) that decides alone once it has read every node's
 * names under the view all nodes share ({@link HomeAuthority}): a node that is down blocks the creates
 * of the names it homes or holds, and no others; no name is ever made twice, also with every node
 * creating the same names at once, and across a change of the peer set.
 */
class PeerHomesTest {
  private static final long MIB = 1L << 20;
  private static final Set<String> NODES = Set.of("n1", "n2", "n3");

  private PeerCluster cluster;

  @AfterEach
  void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  /** Waits until each node has read every node's names under the view they all share. */
  private void awaitHomes(String... nodes) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    for (String n : nodes) {
      Path marker = cluster.node(n).data().resolve("peer").resolve(HomeAuthority.MARKER);
      while (!Files.exists(marker)) {
        assertThat(System.nanoTime()).as("node %s decides alone for its names within 60 s", n).isLessThan(deadline);
        Thread.sleep(50);
      }
    }
  }

  /** Every node's volume images, by the name part of their id ({@code <name's id>.<node>.img}). */
  private Map<String, List<String>> imagesByName() throws Exception {
    Map<String, List<String>> out = new TreeMap<>();
    for (String n : cluster.nodes.keySet()) {
      for (String f : cluster.files(n, "volumes")) {
        if (f.endsWith(".img")) {
          String id = f.substring(0, f.length() - ".img".length());
          out.computeIfAbsent(id.substring(0, id.lastIndexOf('.')), k -> new ArrayList<>()).add(n);
        }
      }
    }
    return out;
  }

  private static String nameOf(Volume v) {
    return v.getVolumeId().substring(0, v.getVolumeId().lastIndexOf('.'));
  }

  @Test
  void aNodeDownBlocksOnlyTheNamesItHomesOrHolds() throws Exception {
    cluster = PeerCluster.start("n1", "n2", "n3");
    awaitHomes("n1", "n2", "n3");
    // Names that exist before n3 goes down: one on each node.
    Map<String, Volume> before = new HashMap<>();
    for (int i = 0; i < 9; i++) {
      String name = "before-" + i;
      before.put(name, cluster.csi("n1").createVolume(PeersTest.create(name, "n" + (i % 3 + 1), 16 * MIB))
          .getVolume());
    }
    cluster.stopNode("n3");

    Map<String, Volume> made = new LinkedHashMap<>();
    List<String> blocked = new ArrayList<>();
    String[] hosts = {"auto", "n1", "n2"};
    for (int i = 0; i < 30; i++) {
      String name = "down-" + i;
      String host = hosts[i % 3];
      String via = i % 2 == 0 ? "n1" : "n2";
      CreateVolumeRequest req = PeersTest.create(name, host, 16 * MIB);
      if (Coordinator.of(name, NODES).equals("n3")) {
        StatusRuntimeException e = GrpcOutcomes.error(() -> cluster.csi(via).createVolume(req));
        assertThat(e.getStatus().getCode()).as(name).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(e.getStatus().getDescription()).as(name).contains("n3");
        blocked.add(name);
      } else {
        Volume v = cluster.csi(via).createVolume(req).getVolume();
        assertThat(PeersTest.nodeOf(v)).as(name).isIn("n1", "n2");
        if (!host.equals("auto")) {
          assertThat(PeersTest.nodeOf(v)).as(name).isEqualTo(host);
        }
        made.put(name, v);
      }
    }
    assertThat(made).as("names homed by n1 or n2").hasSizeGreaterThan(10);
    assertThat(blocked).as("names homed by n3").isNotEmpty();

    // Retries of names that exist on a live node, asked of either live node: the same volume.
    for (Map.Entry<String, Volume> e : before.entrySet()) {
      String owner = PeersTest.nodeOf(e.getValue());
      String home = Coordinator.of(e.getKey(), NODES);
      CreateVolumeRequest req = PeersTest.create(e.getKey(), "auto", 16 * MIB);
      if (owner.equals("n3") || home.equals("n3")) {
        StatusRuntimeException down = GrpcOutcomes.error(() -> cluster.csi("n2").createVolume(req));
        assertThat(down.getStatus().getCode()).as(e.getKey()).isEqualTo(Status.Code.UNAVAILABLE);
        assertThat(down.getStatus().getDescription()).as(e.getKey()).contains("n3");
      } else {
        assertThat(cluster.csi("n2").createVolume(req).getVolume()).as(e.getKey()).isEqualTo(e.getValue());
        assertThat(cluster.csi("n1").createVolume(PeersTest.create(e.getKey(), owner, 16 * MIB)).getVolume())
            .isEqualTo(e.getValue());
      }
    }
    // host=n3, the down node, for a name a live node homes: UNAVAILABLE naming n3.
    String toDown = made.keySet().iterator().next() + "-to-n3";
    while (Coordinator.of(toDown, NODES).equals("n3")) {
      toDown = toDown + "x";
    }
    CreateVolumeRequest toN3 = PeersTest.create(toDown, "n3", 16 * MIB);
    StatusRuntimeException ownerDown = GrpcOutcomes.error(() -> cluster.csi("n1").createVolume(toN3));
    assertThat(ownerDown.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(ownerDown.getStatus().getDescription()).contains("n3");

    cluster.startNode("n3");
    awaitHomes("n3");
    for (String name : blocked) {
      made.put(name, cluster.csi("n3").createVolume(PeersTest.create(name, "auto", 16 * MIB)).getVolume());
    }
    made.put(toDown, cluster.csi("n2").createVolume(toN3).getVolume());
    assertThat(PeersTest.nodeOf(made.get(toDown))).isEqualTo("n3");
    made.putAll(before);
    for (Map.Entry<String, Volume> e : made.entrySet()) {
      for (String via : List.of("n1", "n2", "n3")) {
        assertThat(cluster.csi(via).createVolume(PeersTest.create(e.getKey(), "auto", 16 * MIB)).getVolume())
            .as(e.getKey() + " via " + via).isEqualTo(e.getValue());
      }
    }
    Map<String, List<String>> images = imagesByName();
    assertThat(images).hasSize(made.size());
    assertThat(images.values()).allMatch(nodes -> nodes.size() == 1);
  }

  /**
   * A claim outlives its volume only until the delete: the owner tells the name's home, which forgets
   * the claim once the owner holds nothing of that name. A name made on n3 and deleted is therefore
   * free again when n3 is down, and the homes keep no record per name ever made.
   */
  @Test
  void aDeletedNameIsFreeAgainWhenItsFormerOwnerIsDown() throws Exception {
    cluster = PeerCluster.start("n1", "n2", "n3");
    awaitHomes("n1", "n2", "n3");
    List<String> names = new ArrayList<>();
    for (int i = 0; names.size() < 4; i++) {
      String name = "freed-" + i;
      if (!Coordinator.of(name, NODES).equals("n3")) {
        names.add(name);
      }
    }
    for (String name : names) {
      Volume v = cluster.csi("n1").createVolume(PeersTest.create(name, "n3", 16 * MIB)).getVolume();
      assertThat(PeersTest.nodeOf(v)).isEqualTo("n3");
      cluster.csi(names.indexOf(name) % 2 == 0 ? "n1" : "n3").deleteVolume(
          DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    }
    for (String home : List.of("n1", "n2")) {
      assertThat(cluster.files(home, "peer/claims")).as("claims kept by %s after every delete", home).isEmpty();
    }

    cluster.stopNode("n3");
    for (String name : names) {
      Volume again = cluster.csi("n2").createVolume(PeersTest.create(name, "auto", 16 * MIB)).getVolume();
      assertThat(PeersTest.nodeOf(again)).as(name).isIn("n1", "n2");
    }
  }

  /** A delete whose name's home is down still succeeds: the claim it leaves only sends a later create of the name to the owner. */
  @Test
  void aDeleteSucceedsWhileTheNamesHomeIsDown() throws Exception {
    cluster = PeerCluster.start("n1", "n2", "n3");
    awaitHomes("n1", "n2", "n3");
    String name = "home-down-0";
    for (int i = 1; !Coordinator.of(name, NODES).equals("n2"); i++) {
      name = "home-down-" + i;
    }
    Volume v = cluster.csi("n1").createVolume(PeersTest.create(name, "n3", 16 * MIB)).getVolume();
    cluster.stopNode("n2");
    cluster.csi("n1").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    assertThat(imagesByName()).doesNotContainKey(nameOf(v));
  }

  @Test
  void everyNodeCreatingTheSameNamesAtOnceMakesEachNameOnce() throws Exception {
    cluster = PeerCluster.start("n1", "n2", "n3");
    // No wait for the homes: the first creates race the nodes' reading of each other's names.
    List<String> names = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      names.add("same-" + i);
    }
    Map<String, Set<String>> volumes = new ConcurrentHashMap<>();
    Map<String, Set<Status.Code>> failures = new ConcurrentHashMap<>();
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try {
      CountDownLatch go = new CountDownLatch(1);
      List<Future<?>> runs = new ArrayList<>();
      for (String via : List.of("n1", "n2", "n3")) {
        Callable<Void> run = () -> {
          List<String> order = new ArrayList<>(names);
          Collections.shuffle(order, new Random(via.hashCode()));
          go.await();
          for (int pass = 0; pass < 2; pass++) { // the second pass: retries of every name
            for (String name : order) {
              // Half the names ask for the node creating them: three different hosts for one name.
              String host = name.hashCode() % 2 == 0 ? "auto" : via;
              try {
                Volume v = cluster.csi(via).createVolume(PeersTest.create(name, host, 16 * MIB)).getVolume();
                volumes.computeIfAbsent(name, k -> ConcurrentHashMap.newKeySet()).add(v.getVolumeId());
                assertThat(nameOf(v)).isNotEmpty();
              } catch (StatusRuntimeException e) {
                failures.computeIfAbsent(name, k -> ConcurrentHashMap.newKeySet()).add(e.getStatus().getCode());
              }
            }
          }
          return null;
        };
        runs.add(pool.submit(run));
      }
      go.countDown();
      for (Future<?> f : runs) {
        f.get(5, TimeUnit.MINUTES);
      }
    } finally {
      pool.shutdownNow();
    }
    // Every name answered with one volume id wherever it was asked, and made once.
    assertThat(volumes.keySet()).containsExactlyInAnyOrderElementsOf(names);
    assertThat(volumes.values()).allMatch(ids -> ids.size() == 1);
    assertThat(failures.values().stream().flatMap(Set::stream).distinct().toList())
        .isSubsetOf(Status.Code.ALREADY_EXISTS, Status.Code.ABORTED, Status.Code.UNAVAILABLE);
    Map<String, List<String>> images = imagesByName();
    assertThat(images).hasSize(names.size());
    assertThat(images.values()).allMatch(nodes -> nodes.size() == 1);
  }

  @Test
  void aPeerSetChangeIsReadBeforeCreatesGoOnAndADisagreeingNodeIsRefused() throws Exception {
    // Each node's peer set is the cluster's nodes that its own membership list admits, read at every
    // use, as a discovered set is: n1 and n2 first know only each other; n3 already knows all three.
    // Once n3 is in every set, the homes read every node's names under the new view, creates go on,
    // and every name made before answers with its one volume, whichever node now homes it.
    Map<String, Set<String>> members = new ConcurrentHashMap<>();
    members.put("n1", ConcurrentHashMap.newKeySet());
    members.get("n1").addAll(List.of("n1", "n2"));
    members.put("n2", ConcurrentHashMap.newKeySet());
    members.get("n2").addAll(List.of("n1", "n2"));
    members.put("n3", ConcurrentHashMap.newKeySet());
    members.get("n3").addAll(List.of("n1", "n2", "n3"));
    Map<String, Long> reserves = new LinkedHashMap<>();
    NODES.stream().sorted().forEach(n -> reserves.put(n, 0L));
    cluster = PeerCluster.start(reserves, (self, others) -> () -> {
      Map<String, PeerAddress> admitted = new TreeMap<>(others);
      admitted.keySet().retainAll(members.get(self));
      return admitted;
    });
    awaitHomes("n1", "n2");
    Set<String> two = new TreeSet<>(List.of("n1", "n2"));
    Map<String, Volume> made = new LinkedHashMap<>();
    for (int i = 0; i < 12; i++) {
      String name = "grown-" + i;
      made.put(name, cluster.csi(i % 2 == 0 ? "n1" : "n2")
          .createVolume(PeersTest.create(name, i % 3 == 0 ? "auto" : "n" + (i % 2 + 1), 16 * MIB)).getVolume());
    }
    assertThat(made.values()).allMatch(v -> two.contains(PeersTest.nodeOf(v)));

    // n1 learns of n3 first: until n2 does too, n1 and n2 refuse each other's placing and surveys,
    // naming the disagreement, and nothing is made.
    members.get("n1").add("n3");
    Set<String> three = new TreeSet<>(NODES);
    int refused = 0;
    for (int i = 0; refused < 6; i++) {
      String name = "disagree-" + i;
      String via = Coordinator.of(name, two).equals("n1") ? "n2" : "n1";
      if (via.equals("n1") && Coordinator.of(name, three).equals("n3")) {
        continue; // n1 would send it to n3, which n2 does not admit at all yet (its certificate is refused)
      }
      StatusRuntimeException e =
          GrpcOutcomes.error(() -> cluster.csi(via).createVolume(PeersTest.create(name, "auto", 16 * MIB)));
      assertThat(e.getStatus().getCode()).as(name).isEqualTo(Status.Code.UNAVAILABLE);
      assertThat(e.getStatus().getDescription()).as(name + " via " + via)
          .contains("the nodes do not agree on the peer set yet");
      refused++;
    }
    assertThat(imagesByName()).hasSize(made.size());

    members.get("n2").add("n3");
    assertThat(made.keySet()).anyMatch(n -> Coordinator.of(n, three).equals("n3"));
    Map<String, Volume> all = new LinkedHashMap<>(made);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    for (int i = 0; i < 12; i++) {
      String name = "joined-" + i;
      String via = "n" + (i % 3 + 1);
      while (true) {
        try {
          all.put(name, cluster.csi(via).createVolume(PeersTest.create(name, "auto", 16 * MIB)).getVolume());
          break;
        } catch (StatusRuntimeException e) {
          // Until every node has read the change, a node still on the old view is refused.
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
          assertThat(System.nanoTime()).as("creates go on after the change: %s", e.getStatus()).isLessThan(deadline);
          Thread.sleep(100);
        }
      }
    }
    awaitHomes("n1", "n2", "n3");
    for (Map.Entry<String, Volume> e : all.entrySet()) {
      for (String via : List.of("n1", "n2", "n3")) {
        assertThat(cluster.csi(via).createVolume(PeersTest.create(e.getKey(), "auto", 16 * MIB)).getVolume())
            .as(e.getKey() + " via " + via).isEqualTo(e.getValue());
      }
    }
    Map<String, List<String>> images = imagesByName();
    assertThat(images).hasSize(all.size());
    assertThat(images.values()).allMatch(nodes -> nodes.size() == 1);
  }
}
