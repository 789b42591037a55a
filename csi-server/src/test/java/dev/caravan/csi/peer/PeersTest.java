package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.backend.Topology;
import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.ListVolumesResponse;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Three plugin instances on the file backend, each on its own node id, data directory, CSI socket and
 * certificate, reaching each other over mTLS on loopback: controller calls sent to any of them are
 * done by the node that owns the volume.
 */
class PeersTest {
  private static final long GIB = 1L << 30;
  private static final long MIB = 1L << 20;

  private PeerCluster cluster;

  @AfterEach
  void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  static CreateVolumeRequest create(String name, String host, long bytes) {
    return CreateVolumeRequest.newBuilder()
        .setName(name)
        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(bytes))
        .addVolumeCapabilities(VolumeCapability.newBuilder()
            .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
            .setAccessMode(VolumeCapability.AccessMode.newBuilder()
                .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER)))
        .putParameters("host", host)
        .build();
  }

  static String nodeOf(Volume v) {
    assertThat(v.getAccessibleTopologyList()).hasSize(1);
    return v.getAccessibleTopology(0).getSegmentsOrThrow(Topology.NODE_KEY);
  }

  @Test
  void autoPlacesOnTheNodeWithMostFreeSpaceAfterPromisesAndReserve() throws Exception {
    Map<String, Long> reserves = new LinkedHashMap<>();
    reserves.put("n1", 0L);
    reserves.put("n2", 512 * MIB);
    reserves.put("n3", GIB);
    cluster = PeerCluster.start(reserves);
    // One filesystem under all three: they differ by their reserve, then by what they promised.
    List<String> placed = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      Volume v = cluster.csi("n2").createVolume(create("spread-" + i, "auto", 2 * GIB)).getVolume();
      placed.add(nodeOf(v));
      assertThat(v.getVolumeId()).endsWith("." + nodeOf(v));
      assertThat(cluster.files(nodeOf(v), "volumes")).contains(v.getVolumeId() + ".img");
    }
    assertThat(placed).containsExactly("n1", "n2", "n3", "n1");
  }

  @Test
  void callsSentToANonOwnerAreDoneByTheOwner() throws Exception {
    cluster = PeerCluster.start("n1", "n2", "n3");
    Volume v = cluster.csi("n3").createVolume(create("data", "n1", 64 * MIB)).getVolume();
    String id = v.getVolumeId();
    assertThat(nodeOf(v)).isEqualTo("n1");
    assertThat(cluster.files("n1", "volumes")).contains(id + ".img");
    assertThat(cluster.files("n3", "volumes")).isEmpty();

    long grown = cluster.csi("n2").controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(id).setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(128 * MIB)).build())
        .getCapacityBytes();
    assertThat(grown).isEqualTo(128 * MIB);
    assertThat(Files.size(cluster.node("n1").fileImage(id))).isEqualTo(128 * MIB);
    assertThat(cluster.csi("n3").controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(id).build())
        .getVolume().getCapacityBytes()).isEqualTo(128 * MIB);

    String snap = cluster.csi("n3").createSnapshot(CreateSnapshotRequest.newBuilder()
        .setSourceVolumeId(id).setName("nightly").build()).getSnapshot().getSnapshotId();
    assertThat(snap).endsWith(".n1");
    assertThat(cluster.files("n1", "snapshots")).contains(snap + ".img");
    assertThat(cluster.files("n3", "snapshots")).isEmpty();
    assertThat(cluster.csi("n2").listSnapshots(ListSnapshotsRequest.getDefaultInstance()).getEntriesList())
        .extracting(e -> e.getSnapshot().getSnapshotId()).containsExactly(snap);

    // The owner refuses to delete a volume that has snapshots, whoever asked.
    assertThat(GrpcOutcomes.code(() -> cluster.csi("n2").deleteVolume(
        DeleteVolumeRequest.newBuilder().setVolumeId(id).build()))).isEqualTo(Status.Code.FAILED_PRECONDITION);
    cluster.csi("n2").deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snap).build());
    assertThat(cluster.files("n1", "snapshots")).isEmpty();
    cluster.csi("n3").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(cluster.files("n1", "volumes")).isEmpty();
  }

  @Test
  void aRetriedCreateOnAnotherInstanceReturnsTheSameVolume() throws Exception {
    cluster = PeerCluster.start("n1", "n2", "n3");
    Volume first = cluster.csi("n1").createVolume(create("retried", "auto", 64 * MIB)).getVolume();
    for (String via : List.of("n1", "n2", "n3")) {
      assertThat(cluster.csi(via).createVolume(create("retried", "auto", 64 * MIB)).getVolume()).isEqualTo(first);
    }
    String owner = nodeOf(first);
    String other = owner.equals("n2") ? "n3" : "n2";
    StatusRuntimeException e = GrpcOutcomes.error(() -> cluster.csi("n1").createVolume(create("retried", other, 64 * MIB)));
    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.ALREADY_EXISTS);
    assertThat(e.getStatus().getDescription()).contains("node " + owner);
    int volumes = 0;
    for (String n : List.of("n1", "n2", "n3")) {
      volumes += (int) cluster.files(n, "volumes").stream().filter(f -> f.endsWith(".img")).count();
    }
    assertThat(volumes).isEqualTo(1);
  }

  @Test
  void listsMergeEveryNodeWithTokensAnyInstanceAccepts() throws Exception {
    cluster = PeerCluster.start("n1", "n2", "n3");
    List<String> ids = new ArrayList<>();
    String[] hosts = {"n1", "n2", "n3", "n1", "n2"};
    for (int i = 0; i < hosts.length; i++) {
      ids.add(cluster.csi("n3").createVolume(create("merged-" + i, hosts[i], 16 * MIB)).getVolume().getVolumeId());
    }
    List<String> seen = new ArrayList<>();
    String token = "";
    String[] via = {"n1", "n2", "n3"};
    int call = 0;
    do {
      ListVolumesResponse page = cluster.csi(via[call++ % 3]).listVolumes(
          ListVolumesRequest.newBuilder().setMaxEntries(2).setStartingToken(token).build());
      assertThat(page.getEntriesCount()).isLessThanOrEqualTo(2);
      page.getEntriesList().forEach(e -> seen.add(e.getVolume().getVolumeId()));
      token = page.getNextToken();
    } while (!token.isEmpty());
    assertThat(seen).containsExactlyElementsOf(ids.stream().sorted().toList());
  }

  @Test
  void whileTheOwnerIsDownItsCallsAreUnavailableNamingIt() throws Exception {
    cluster = PeerCluster.start("n1", "n2", "n3");
    String id = cluster.csi("n1").createVolume(create("orphaned", "n2", 16 * MIB)).getVolume().getVolumeId();
    cluster.stopNode("n2");

    StatusRuntimeException delete = GrpcOutcomes.error(() -> cluster.csi("n1").deleteVolume(
        DeleteVolumeRequest.newBuilder().setVolumeId(id).build()));
    assertThat(delete.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(delete.getStatus().getDescription()).contains("node n2").contains("Bring the caravan plugin on n2 back");
    StatusRuntimeException list = GrpcOutcomes.error(() -> cluster.csi("n3").listVolumes(
        ListVolumesRequest.getDefaultInstance()));
    assertThat(list.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(list.getStatus().getDescription()).contains("node n2");
    // A new name whose home is n2 waits for it (names other nodes home do not: PeerHomesTest).
    String homedOnN2 = "while-down";
    while (!Coordinator.of(homedOnN2, Set.of("n1", "n2", "n3")).equals("n2")) {
      homedOnN2 = homedOnN2 + "-";
    }
    String name = homedOnN2;
    StatusRuntimeException create = GrpcOutcomes.error(() -> cluster.csi("n1").createVolume(
        create(name, "auto", 16 * MIB)));
    assertThat(create.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(create.getStatus().getDescription()).contains("node n2");
    // No other node touched n2's storage, and once it is back the delete goes through.
    assertThat(cluster.files("n2", "volumes")).contains(id + ".img");
    cluster.startNode("n2");
    cluster.csi("n1").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(cluster.files("n2", "volumes")).isEmpty();
  }

  @Test
  void aPeerRestartingBetweenPagesLosesNothing() throws Exception {
    cluster = PeerCluster.start("n1", "n2", "n3");
    List<String> ids = new ArrayList<>();
    String[] hosts = {"n1", "n2", "n3", "n3", "n2", "n1"};
    for (int i = 0; i < hosts.length; i++) {
      ids.add(cluster.csi("n1").createVolume(create("paged-" + i, hosts[i], 16 * MIB)).getVolume().getVolumeId());
    }
    List<String> seen = new ArrayList<>();
    ListVolumesResponse page = cluster.csi("n1").listVolumes(ListVolumesRequest.newBuilder().setMaxEntries(2).build());
    page.getEntriesList().forEach(e -> seen.add(e.getVolume().getVolumeId()));
    cluster.stopNode("n3");
    String token = page.getNextToken();
    StatusRuntimeException down = GrpcOutcomes.error(() -> cluster.csi("n1").listVolumes(
        ListVolumesRequest.newBuilder().setMaxEntries(2).setStartingToken(token).build()));
    assertThat(down.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(down.getStatus().getDescription()).contains("node n3");
    cluster.startNode("n3");
    String next = token;
    while (!next.isEmpty()) {
      page = cluster.csi("n2").listVolumes(ListVolumesRequest.newBuilder().setMaxEntries(2).setStartingToken(next)
          .build());
      page.getEntriesList().forEach(e -> seen.add(e.getVolume().getVolumeId()));
      next = page.getNextToken();
    }
    assertThat(seen).containsExactlyElementsOf(ids.stream().sorted().toList());
  }
}
