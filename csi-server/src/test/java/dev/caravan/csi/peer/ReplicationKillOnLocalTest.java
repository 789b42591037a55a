package dev.caravan.csi.peer;

import static dev.caravan.csi.peer.ReplicationOnLocalTest.get;
import static dev.caravan.csi.peer.ReplicationOnLocalTest.getOr;
import static dev.caravan.csi.peer.ReplicationOnLocalTest.newestSnapshot;
import static dev.caravan.csi.peer.ReplicationOnLocalTest.snapshotsOf;
import static dev.caravan.csi.peer.ReplicationOnLocalTest.waitFor;
import static dev.caravan.csi.peer.ReplicationOnLocalTest.write;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.support.CrashPoints;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.FieldSource;

/**
 * Replication on the {@code local} backend killed at each of its steps, in the guest of {@code
 * scripts/guest-suite}: the owner once its replication snapshot is taken and a mebibyte into its
 * stream, the replica node a mebibyte into a receive and once a receive is complete but before the
 * older copy is destroyed (during a refresh in full, when that copy is a whole other dataset). The
 * node dies as SIGKILL leaves it (a plugin process of its own, armed with a {@link CrashPoints crash
 * point}); the kernel keeps what ZFS made of the cut stream. Once the node is back, the next round
 * brings the copy up to date, and neither side keeps anything the crash left: one replica dataset
 * with one snapshot, the owner's newest replication snapshot, no partial receive, no older copy.
 */
public class ReplicationKillOnLocalTest {
  private static final long MIB = 1L << 20;
  /** Steps of the owner's round: its replication snapshot taken, then its stream under way. */
  static final List<String> OWNER_STEPS =
      List.of("local.replication.point.after-snapshot", "local.replication.send.after-first-mib");
  /** Steps of a receive: the stream under way, then received with the older snapshots and copy still there. */
  static final List<String> RECEIVER_STEPS =
      List.of("local.replica.receive.after-first-mib", "local.replica.receive.before-cleanup");
  /** Every step this suite kills at (KillConformance requires a case for every crash point of the sources). */
  public static final List<String> STEPS = Stream.concat(OWNER_STEPS.stream(), RECEIVER_STEPS.stream()).toList();

  @RegisterExtension
  static final GuestPoolCluster GUEST = new GuestPoolCluster(List.of("n1", "n2"),
      "replication of local volumes killed at each step", (self, others) -> new StaticPeers(others));
  private static GuestPools pools;
  private static PeerCluster cluster;

  @BeforeAll
  static void start() {
    pools = GUEST.pools();
    cluster = GUEST.cluster();
  }

  /** A case, given its crash point and the id of its volume. */
  private interface Case {
    void run(String step, String id) throws Exception;
  }

  /**
   * Runs {@code body} on a volume on n1 replicated to n2 once an hour, 8 MiB written, then deletes it:
   * its first round, at once, makes the first copy; after that only the rounds the test starts run,
   * and a restarted owner's first round.
   */
  private static void onAReplicatedVolume(String step, Case body) throws Exception {
    String id = cluster.csi("n1").createVolume(PeersTest.create("killed", "n1", 64 * MIB).toBuilder()
        .putParameters("replicas", "1").putParameters("replicationInterval", "1h").build()).getVolume().getVolumeId();
    try {
      write(dataset(id), 0, (int) (8 * MIB), 1);
      waitFor(Duration.ofMinutes(2), () -> upToDate(id), "the first copy on n2");
      body.run(step, id);
    } finally {
      delete(id);
    }
  }

  @ParameterizedTest
  @FieldSource("OWNER_STEPS")
  void anOwnerKilledMidRoundLeavesNothingAndItsNextRoundBringsTheCopyUpToDate(String step) throws Exception {
    onAReplicatedVolume(step, ReplicationKillOnLocalTest::ownerKilledAt);
  }

  private static void ownerKilledAt(String step, String id) throws Exception {
    String replica = replica(id);
    String before = newestSnapshot(replica);
    write(dataset(id), 16 * MIB, (int) (8 * MIB), 2);
    cluster.stopNode("n1");
    cluster.startProcess("n1", Optional.of(step)); // its first round, at once, dies at the step
    assertThat(cluster.awaitExit("n1")).as("n1's exit at %s", step).isEqualTo(CrashPoints.EXIT_STATUS);
    assertThat(newestSnapshot(replica)).as("n2's copy after the owner's death").isEqualTo(before);
    if (step.equals("local.replication.send.after-first-mib")) {
      waitFor(Duration.ofSeconds(30), () -> !getOr("receive_resume_token", replica, "-").equals("-"),
          "the cut stream's resumable partial receive on n2");
    }

    cluster.startNode("n1"); // its first round, at once, resumes what waits and sends the rest
    waitFor(Duration.ofMinutes(3), () -> upToDate(id), "n2's copy at n1's newest replication snapshot");
    assertConverged(id, replica, true);
  }

  @ParameterizedTest
  @FieldSource("RECEIVER_STEPS")
  void aReplicaNodeKilledMidReceiveKeepsAWholeCopyAndTheNextRoundBringsItUpToDate(String step) throws Exception {
    onAReplicatedVolume(step, ReplicationKillOnLocalTest::replicaKilledAt);
  }

  private static void replicaKilledAt(String step, String id) throws Exception {
    String replica = replica(id);
    String before = newestSnapshot(replica);
    String beforeGuid = get("guid", before);
    boolean refresh = step.equals("local.replica.receive.before-cleanup");
    if (refresh) {
      // The owner without its replication snapshots: the round refreshes the copy in full, beside it.
      for (String own : replicationSnapshots(dataset(id))) {
        GuestPools.run("zfs", "destroy", own);
      }
    }
    write(dataset(id), 16 * MIB, (int) (8 * MIB), 3);
    cluster.stopNode("n2");
    cluster.startProcess("n2", Optional.of(step));
    Replicator.Attempt killed = replicator().replicate(id, "n2");
    assertThat(killed.failure()).as("the round whose receiver died at %s", step).isPresent();
    assertThat(cluster.awaitExit("n2")).as("n2's exit at %s", step).isEqualTo(CrashPoints.EXIT_STATUS);
    assertThat(snapshotsOf(replica)).as("the copy n2 held, whole after its death").contains(before);
    assertThat(get("guid", before)).isEqualTo(beforeGuid);
    if (refresh) {
      String fresh = newestSnapshot(replica + "-b");
      assertThat(get("guid", fresh)).as("the refreshed copy, received before the death")
          .isEqualTo(get("guid", dataset(id) + fresh.substring(fresh.indexOf('@'))));
    } else {
      waitFor(Duration.ofSeconds(30), () -> !getOr("receive_resume_token", replica, "-").equals("-"),
          "the cut receive's resumable partial state on n2");
    }

    cluster.startNode("n2");
    if (refresh) {
      // Two whole copies until the next receive destroys the older: a restore starts from the newer.
      assertThat(cluster.csi("n2").listSnapshots(ListSnapshotsRequest.newBuilder().setSourceVolumeId(id).build())
          .getEntriesList()).singleElement().satisfies(e -> assertThat(e.getSnapshot().getSnapshotId())
              .isEqualTo("local/v1/n2/" + newestSnapshot(replica + "-b")));
    }
    Replicator.Attempt next = replicator().replicate(id, "n2");
    assertThat(next.failure()).as("the round after n2's restart").isEmpty();
    assertThat(upToDate(id)).as("n2's copy at n1's newest replication snapshot").isTrue();
    assertConverged(id, refresh ? replica + "-b" : replica, false);
  }

  /**
   * Whether n2's copy is n1's newest replication snapshot, with no receive waiting; false too when a
   * round running meanwhile destroyed what this read.
   */
  private static boolean upToDate(String id) {
    try {
      return copyIsNewest(id);
    } catch (AssertionError gone) {
      return false;
    }
  }

  private static boolean copyIsNewest(String id) {
    List<String> own = replicationSnapshots(dataset(id));
    if (own.isEmpty()) {
      return false;
    }
    String newest = own.getLast();
    String name = newest.substring(newest.indexOf('@'));
    for (String place : List.of(replica(id), replica(id) + "-b")) {
      if (snapshotsOf(place).contains(place + name)) {
        return getOr("receive_resume_token", place, "-").equals("-")
            && get("guid", place + name).equals(get("guid", newest));
      }
    }
    return false;
  }

  /**
   * On n2, the one copy in {@code place} with its one snapshot, and nothing else of the volume's; on
   * n1, the replication snapshot that copy is, and after a round of n1's scheduler (which prunes; a
   * round the test starts does not) no other.
   */
  private static void assertConverged(String id, String place, boolean pruned) {
    String copy = newestSnapshot(place);
    assertThat(pools.objects("n2").stream().filter(o -> o.startsWith(replica(id))).toList())
        .as("n2's datasets of the volume").containsExactly(place, copy);
    assertThat(getOr("receive_resume_token", place, "-")).as("a receive waiting on n2").isEqualTo("-");
    String own = dataset(id) + copy.substring(copy.indexOf('@'));
    if (pruned) {
      assertThat(replicationSnapshots(dataset(id))).as("n1's replication snapshots").containsExactly(own);
    } else {
      assertThat(replicationSnapshots(dataset(id))).as("n1's replication snapshots").contains(own);
    }
  }

  /** Deletes the volume through n1, which has n2 destroy its copy: nothing of it is left on either node. */
  private static void delete(String id) throws Exception {
    for (String node : List.of("n1", "n2")) {
      if (cluster.node(node).plugin == null) { // a case that failed with the node down, or its process up
        cluster.stopNode(node);
        cluster.startNode(node);
      }
    }
    cluster.csi("n1").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(pools.objects("n2")).as("n2's datasets after DeleteVolume").isEmpty();
  }

  private static Replicator replicator() {
    return cluster.node("n1").plugin.peering().orElseThrow().replicator().orElseThrow();
  }

  private static String dataset(String volumeId) {
    return ReplicationOnLocalTest.dataset(volumeId);
  }

  private static String replica(String volumeId) {
    return pools.replicaDataset("n2", volumeId);
  }

  private static List<String> replicationSnapshots(String dataset) {
    return ReplicationOnLocalTest.replicationSnapshots(dataset);
  }
}
