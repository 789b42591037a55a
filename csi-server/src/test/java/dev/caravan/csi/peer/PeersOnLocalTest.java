package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.ListVolumesResponse;
import dev.caravan.csi.v1.Volume;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link PeersTest} on the {@code local} backend in the guest of {@code scripts/guest-suite}: three
 * plugin instances in this JVM, node ids n1..n3, each on a ZFS pool of its own ({@link GuestPools}),
 * with certificates from a throwaway CA and peer endpoints on loopback. The {@code zfs} command is the
 * oracle of which pool holds what. One cluster serves every test (each starts and ends with no
 * volumes), to keep the guest's time down.
 */
class PeersOnLocalTest {
  private static final long MIB = 1L << 20;
  private static final List<String> NODES = List.of("n1", "n2", "n3");

  @RegisterExtension
  static final GuestPoolCluster GUEST =
      new GuestPoolCluster(NODES, "the multi-node local backend", (self, others) -> new StaticPeers(others));
  private static GuestPools pools;
  private static PeerCluster cluster;

  @BeforeAll
  static void start() {
    pools = GUEST.pools();
    cluster = GUEST.cluster();
  }

  private static String dataset(String volumeId) {
    String rest = volumeId.substring("local/v1/".length());
    return rest.substring(rest.indexOf('/') + 1);
  }

  private static void delete(String via, String id) {
    cluster.csi(via).deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
  }

  @Test
  void autoSpreadsThickVolumesByEachPoolsFreeSpace() {
    List<String> ids = new ArrayList<>();
    List<String> placed = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      // What placement must pick, seen through zfs: the most available bytes in whole grains, then fewest
      // volumes, then id.
      Map<String, Long> available = new LinkedHashMap<>();
      Map<String, Integer> volumes = new LinkedHashMap<>();
      for (String n : NODES) {
        available.put(n, pools.available(n));
        volumes.put(n, pools.objects(n).size());
      }
      String expected = NODES.stream().min(Comparator.<String>comparingLong(n -> available.get(n) / Placement.GRAIN)
          .reversed()
          .thenComparing(volumes::get).thenComparing(n -> n)).orElseThrow();
      Volume v = cluster.csi("n2").createVolume(PeersTest.create("spread-" + i, "auto", 128 * MIB)).getVolume();
      String node = PeersTest.nodeOf(v);
      assertThat(node).as("node of volume %d, pools' available bytes %s", i, available).isEqualTo(expected);
      assertThat(v.getVolumeId()).startsWith("local/v1/" + node + "/" + pools.pool(node) + "/");
      assertThat(pools.objects(node)).contains(dataset(v.getVolumeId()));
      ids.add(v.getVolumeId());
      placed.add(node);
    }
    // Thick zvols take their size from the pool at once, so equal pools take turns, and the fourth,
    // with every pool as full as the others but for metadata, goes to the first node by id.
    assertThat(placed.subList(0, 3)).containsExactlyInAnyOrderElementsOf(NODES);
    assertThat(placed.get(3)).isEqualTo("n1");
    for (String id : ids) {
      delete("n3", id);
    }
  }

  @Test
  void createExpandSnapshotAndDeleteSentToANonOwnerAreDoneByTheOwnerInItsPool() {
    Volume v = cluster.csi("n3").createVolume(PeersTest.create("owned", "n1", 64 * MIB)).getVolume();
    String id = v.getVolumeId();
    String dataset = dataset(id);
    assertThat(PeersTest.nodeOf(v)).isEqualTo("n1");
    assertThat(dataset).startsWith(pools.pool("n1") + "/" + GuestPools.PARENT + "/");
    assertThat(pools.objects("n1")).containsExactly(dataset);
    assertThat(pools.objects("n2")).isEmpty();
    assertThat(pools.objects("n3")).isEmpty();

    long grown = cluster.csi("n2").controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(id)
        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(96 * MIB)).build()).getCapacityBytes();
    assertThat(grown).isEqualTo(96 * MIB);
    assertThat(GuestPools.numeric("volsize", dataset)).isEqualTo(96 * MIB);

    String snap = cluster.csi("n3").createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(id)
        .setName("nightly").build()).getSnapshot().getSnapshotId();
    assertThat(snap).startsWith("local");
    assertThat(pools.objects("n1")).hasSize(2).allMatch(o -> o.startsWith(dataset));
    assertThat(pools.objects("n2")).isEmpty();
    assertThat(pools.objects("n3")).isEmpty();
    assertThat(cluster.csi("n2").listSnapshots(ListSnapshotsRequest.getDefaultInstance()).getEntriesList())
        .extracting(e -> e.getSnapshot().getSnapshotId()).containsExactly(snap);

    cluster.csi("n2").deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snap).build());
    assertThat(pools.objects("n1")).containsExactly(dataset);
    delete("n3", id);
    assertThat(pools.objects("n1")).isEmpty();
  }

  @Test
  void aRetriedCreateOnAnotherInstanceReturnsTheSameZvolAndListsMergeEveryPool() {
    Volume first = cluster.csi("n1").createVolume(PeersTest.create("retried", "auto", 32 * MIB)).getVolume();
    for (String via : List.of("n2", "n3", "n1")) {
      assertThat(cluster.csi(via).createVolume(PeersTest.create("retried", "auto", 32 * MIB)).getVolume())
          .isEqualTo(first);
    }
    int zvols = 0;
    for (String n : NODES) {
      zvols += pools.objects(n).size();
    }
    assertThat(zvols).as("zvols in all three pools").isEqualTo(1);

    List<String> ids = new ArrayList<>(List.of(first.getVolumeId()));
    for (String n : NODES) {
      ids.add(cluster.csi("n2").createVolume(PeersTest.create("listed-" + n, n, 32 * MIB)).getVolume().getVolumeId());
    }
    List<String> seen = new ArrayList<>();
    String token = "";
    int call = 0;
    do {
      ListVolumesResponse page = cluster.csi(NODES.get(call++ % 3)).listVolumes(
          ListVolumesRequest.newBuilder().setMaxEntries(3).setStartingToken(token).build());
      page.getEntriesList().forEach(e -> seen.add(e.getVolume().getVolumeId()));
      token = page.getNextToken();
    } while (!token.isEmpty());
    assertThat(seen).containsExactlyElementsOf(ids.stream().sorted().toList());
    for (String id : ids) {
      delete("n1", id);
    }
  }
}
