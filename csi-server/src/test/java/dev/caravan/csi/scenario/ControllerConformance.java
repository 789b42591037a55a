package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.code;
import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.ControllerGetCapabilitiesRequest;
import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.ControllerServiceCapability;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.GetCapacityRequest;
import dev.caravan.csi.v1.GetPluginCapabilitiesRequest;
import dev.caravan.csi.v1.GetPluginInfoRequest;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListSnapshotsResponse;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.ListVolumesResponse;
import dev.caravan.csi.v1.PluginCapability;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.Snapshot;
import dev.caravan.csi.v1.Topology;
import dev.caravan.csi.v1.TopologyRequirement;
import dev.caravan.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.caravan.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeCapability.AccessMode.Mode;
import dev.caravan.csi.v1.VolumeContentSource;
import io.grpc.Status.Code;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The Controller and Identity services on one backend, over a real unix socket. What exists on the
 * storage is read through {@link TestBackend}'s oracle (files, datasets), never through the plugin
 * alone; sizes and codes a backend may choose (rounding, which non-OK code for a request no rule
 * names) are left to its own class.
 */
abstract class ControllerConformance {
  private PluginFixture f;

  /** The backend this suite runs on. */
  abstract TestBackend backend();

  @BeforeEach
  void start() throws IOException {
    f = PluginFixture.start(backend());
  }

  @AfterEach
  void stop() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  /** {@code n} of the backend's size units (MiB on file and local, GiB on qnap). */
  private long u(long n) {
    return n * f.backend.sizeUnit();
  }

  private CreateVolumeRequest.Builder create(String name, long bytes) {
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(Caps.mount("ext4"))
        .setCapacityRange(Caps.bytes(bytes));
  }

  private Volume createVolume(String name, long bytes) {
    return f.controller.createVolume(create(name, bytes).build()).getVolume();
  }

  private List<String> listedVolumes() {
    return f.controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList().stream()
        .map(e -> e.getVolume().getVolumeId()).toList();
  }

  @Test
  void identityDescribesThePlugin() {
    var info = f.identity.getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
    assertThat(info.getName()).isEqualTo("caravan.csi." + f.backend.driver());
    assertThat(info.getVendorVersion()).isNotEmpty().isNotEqualTo("unknown");
    var caps = f.identity.getPluginCapabilities(GetPluginCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList();
    assertThat(caps).extracting(c -> c.getService().getType()).contains(
        PluginCapability.Service.Type.CONTROLLER_SERVICE, PluginCapability.Service.Type.VOLUME_ACCESSIBILITY_CONSTRAINTS);
    assertThat(caps).extracting(c -> c.getVolumeExpansion().getType()).contains(PluginCapability.VolumeExpansion.Type.ONLINE);
    assertThat(f.identity.probe(ProbeRequest.getDefaultInstance()).getReady().getValue()).isTrue();
    var ctrl = f.controller.controllerGetCapabilities(ControllerGetCapabilitiesRequest.getDefaultInstance())
        .getCapabilitiesList().stream().map(c -> c.getRpc().getType()).toList();
    assertThat(ctrl).contains(ControllerServiceCapability.RPC.Type.CREATE_DELETE_VOLUME,
        ControllerServiceCapability.RPC.Type.LIST_VOLUMES, ControllerServiceCapability.RPC.Type.CREATE_DELETE_SNAPSHOT,
        ControllerServiceCapability.RPC.Type.LIST_SNAPSHOTS, ControllerServiceCapability.RPC.Type.CLONE_VOLUME,
        ControllerServiceCapability.RPC.Type.EXPAND_VOLUME, ControllerServiceCapability.RPC.Type.GET_CAPACITY,
        ControllerServiceCapability.RPC.Type.GET_VOLUME, ControllerServiceCapability.RPC.Type.VOLUME_CONDITION);
    if (f.backend.publishes()) {
      // The fence (qnap): published to a volume that does not exist is NOT_FOUND, not UNIMPLEMENTED.
      assertThat(ctrl).contains(ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME);
      assertThat(code(() -> f.controller.controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder()
          .setVolumeId(f.backend.absentVolumeId(f.work)).setNodeId(f.backend.nodeId())
          .setVolumeCapability(Caps.mount("ext4")).build()))).isEqualTo(Code.NOT_FOUND);
    } else {
      assertThat(ctrl).doesNotContain(ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME);
      assertThat(code(() -> f.controller.controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder()
          .setVolumeId("x").setNodeId(PluginFixture.NODE).build()))).isEqualTo(Code.UNIMPLEMENTED);
    }
  }

  @Test
  void createVolumeIsIdempotentByName() throws IOException {
    Volume a = createVolume("db", u(100));
    Volume b = createVolume("db", u(100));
    assertThat(b).isEqualTo(a);
    assertThat(a.getCapacityBytes()).isEqualTo(u(100));
    assertThat(a.getVolumeContextMap()).containsEntry("fsType", "ext4").containsEntry("access", "mount");
    if (f.backend.nodeLocal()) {
      assertThat(a.getVolumeContextMap()).containsEntry("node", PluginFixture.NODE);
      assertThat(a.getAccessibleTopologyList()).containsExactly(
          Topology.newBuilder().putSegments("caravan.csi/node", PluginFixture.NODE).build());
    } else {
      assertThat(a.getAccessibleTopologyList()).as("reachable from every node").isEmpty();
    }
    Set<String> stored = f.storageObjects();
    assertThat(stored).isNotEmpty();
    // a compatible range (the existing size fits) returns the same volume
    Volume c = f.controller.createVolume(create("db", u(50)).setCapacityRange(Caps.range(u(50), u(200))).build()).getVolume();
    assertThat(c.getVolumeId()).isEqualTo(a.getVolumeId());
    assertThat(code(() -> createVolume("db", u(200)))).isEqualTo(Code.ALREADY_EXISTS);
    assertThat(code(() -> f.controller.createVolume(create("db", u(100)).clearVolumeCapabilities()
        .addVolumeCapabilities(Caps.mount("xfs")).setCapacityRange(Caps.bytes(u(400))).build())))
        .isEqualTo(Code.ALREADY_EXISTS);
    assertThat(f.storageObjects()).as("repeats and refused repeats add nothing").isEqualTo(stored);
    assertThat(f.backend.storedSize(f.work, a.getVolumeId())).isEqualTo(u(100));
  }

  @Test
  void capacityRulesAndSizes() throws IOException {
    List<Volume> sized = new ArrayList<>();
    if (f.backend.roundsSizes()) {
      Volume odd = createVolume("odd", u(10) + 1);
      assertThat(odd.getCapacityBytes()).as("ext4 minimum").isEqualTo(u(16));
      Volume round = createVolume("round", u(100) + 1);
      assertThat(round.getCapacityBytes()).as("rounded up to the backend's unit").isBetween(u(100) + 1, u(101));
      sized.addAll(List.of(odd, round));
    } else {
      // Sizes are whole units or refused, never rounded silently.
      Set<String> before = f.storageObjects();
      for (long bytes : List.of(u(1) + 1, u(100) - 4096, 10L << 20)) {
        var e = error(() -> createVolume("unaligned", bytes));
        assertThat(e.getStatus().getCode()).as(bytes + " bytes").isEqualTo(Code.INVALID_ARGUMENT);
        assertThat(e.getStatus().getDescription()).contains("capacity_range.required_bytes").contains("whole");
      }
      assertThat(f.storageObjects()).isEqualTo(before);
    }
    Volume exact = f.controller.createVolume(create("exact", 0).setCapacityRange(Caps.range(u(32), u(32))).build()).getVolume();
    assertThat(exact.getCapacityBytes()).isEqualTo(u(32));
    Volume dflt = f.controller.createVolume(create("default", 0).clearCapacityRange().build()).getVolume();
    assertThat(dflt.getCapacityBytes()).isEqualTo(1L << 30);
    sized.addAll(List.of(exact, dflt));
    for (Volume v : sized) {
      assertThat(f.backend.storedSize(f.work, v.getVolumeId())).as(v.getVolumeId()).isEqualTo(v.getCapacityBytes());
    }
    Set<String> stored = f.storageObjects();
    // The largest size a request can name (in whole units where the backend refuses anything else).
    long absurd = f.backend.roundsSizes() ? Long.MAX_VALUE : Long.MAX_VALUE / u(1) * u(1);
    assertThat(code(() -> createVolume("absurd", absurd))).isEqualTo(Code.OUT_OF_RANGE);
    // more than any pool here holds: not allowed, or no room (the spec names no code for a full pool)
    assertThat(code(() -> createVolume("exabyte", 1L << 60))).isIn(Code.OUT_OF_RANGE, Code.RESOURCE_EXHAUSTED);
    assertThat(code(() -> f.controller.createVolume(create("small-xfs", 0).clearVolumeCapabilities()
        .addVolumeCapabilities(Caps.mount("xfs")).setCapacityRange(Caps.range(0, 100 * MIB)).build())))
        .isEqualTo(Code.OUT_OF_RANGE);
    assertThat(code(() -> f.controller.createVolume(create("neg", 0).setCapacityRange(Caps.range(-1, 0)).build())))
        .isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> f.controller.createVolume(create("neg2", 0).setCapacityRange(Caps.range(0, -5)).build())))
        .isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> f.controller.createVolume(create("inverted", 0).setCapacityRange(Caps.range(u(50), u(20))).build())))
        .isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(f.storageObjects()).as("refused creates store nothing").isEqualTo(stored);
  }

  @Test
  void badInputIsRejectedAndCreatesNothing() throws IOException {
    var e = error(() -> f.controller.createVolume(create("", u(20)).build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(e.getStatus().getDescription()).contains("name");
    assertThat(code(() -> f.controller.createVolume(create("bad\u0001name", u(20)).build()))).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> f.controller.createVolume(create("x".repeat(129), u(20)).build()))).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> f.controller.createVolume(create("nocaps", u(20)).clearVolumeCapabilities().build())))
        .isEqualTo(Code.INVALID_ARGUMENT);
    var multi = error(() -> f.controller.createVolume(create("multi", u(20)).clearVolumeCapabilities()
        .addVolumeCapabilities(Caps.mount("ext4", Mode.MULTI_NODE_MULTI_WRITER)).build()));
    assertThat(multi.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(multi.getStatus().getDescription()).contains("MULTI_NODE_MULTI_WRITER").contains("one node at a time");
    var unknown = error(() -> f.controller.createVolume(create("params", u(20)).putParameters("nope", "1").build()));
    assertThat(unknown.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(unknown.getStatus().getDescription()).contains("nope").contains("fsType");
    assertThat(code(() -> f.controller.createVolume(create("btrfs", u(20)).clearVolumeCapabilities()
        .addVolumeCapabilities(Caps.mount("btrfs")).build()))).isEqualTo(Code.INVALID_ARGUMENT);
    var flag = error(() -> f.controller.createVolume(create("flags", u(20)).clearVolumeCapabilities()
        .addVolumeCapabilities(Caps.mount("ext4", Mode.SINGLE_NODE_WRITER, "errors=panic")).build()));
    assertThat(flag.getStatus().getDescription()).contains("errors=panic").contains("noatime");
    assertThat(code(() -> f.controller.createVolume(create("twofs", u(20))
        .addVolumeCapabilities(Caps.mount("xfs")).build()))).as("contradictory capabilities").isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> f.controller.createVolume(create("noaccess", u(20)).clearVolumeCapabilities()
        .addVolumeCapabilities(VolumeCapability.newBuilder().setMount(VolumeCapability.MountVolume.getDefaultInstance())).build())))
        .isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> f.controller.createVolume(create("notype", u(20)).clearVolumeCapabilities()
        .addVolumeCapabilities(VolumeCapability.newBuilder().setAccessMode(
            VolumeCapability.AccessMode.newBuilder().setMode(Mode.SINGLE_NODE_WRITER))).build())))
        .isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> f.controller.createVolume(create("clone-bad", u(20)).setVolumeContentSource(
        VolumeContentSource.newBuilder().setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId("../../etc")))
        .build()))).isIn(Code.INVALID_ARGUMENT, Code.NOT_FOUND);
    if (f.backend.nodeLocal()) {
      assertThat(code(() -> f.controller.createVolume(create("elsewhere", u(20)).setAccessibilityRequirements(
          TopologyRequirement.newBuilder().addRequisite(Topology.newBuilder().putSegments("caravan.csi/node", "other"))).build())))
          .as("only another node allowed").isNotEqualTo(Code.OK);
    }
    // Ids the plugin could never have issued: the spec leaves INVALID_ARGUMENT vs "does not exist"
    // open (csi-spec-rules.md §3); DeleteVolume of what does not exist is OK.
    for (String bad : List.of("../etc/passwd", "a/b", "Vol.1", ".")) {
      assertThat(code(() -> f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(bad).build())))
          .as(bad).isIn(Code.INVALID_ARGUMENT, Code.OK);
      assertThat(code(() -> f.controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(bad).build())))
          .as(bad).isIn(Code.INVALID_ARGUMENT, Code.NOT_FOUND);
    }
    for (String bad : List.of("vol\0x", "x".repeat(200), "")) {
      assertThat(code(() -> f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(bad).build())))
          .as(bad).isEqualTo(Code.INVALID_ARGUMENT);
      assertThat(code(() -> f.controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(bad).build())))
          .as(bad).isEqualTo(Code.INVALID_ARGUMENT);
    }
    assertThat(listedVolumes()).isEmpty();
    assertThat(f.storageObjects()).isEmpty();
  }

  @Test
  void deleteVolumeIsIdempotent() throws IOException {
    Volume v = createVolume("gone", u(20));
    assertThat(f.storageObjects()).isNotEmpty();
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(f.backend.absentVolumeId(f.work)).build());
    assertThat(f.storageObjects()).isEmpty();
    assertThat(code(() -> f.controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).build()))).isEqualTo(Code.NOT_FOUND);
  }

  @Test
  void listVolumesPaginatesWithStableTokens() {
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      ids.add(createVolume("page-" + i, u(20)).getVolumeId());
    }
    List<String> seen = new ArrayList<>();
    String token = "";
    int pages = 0;
    do {
      ListVolumesResponse r = f.controller.listVolumes(ListVolumesRequest.newBuilder().setMaxEntries(2).setStartingToken(token).build());
      assertThat(r.getEntriesCount()).isLessThanOrEqualTo(2);
      r.getEntriesList().forEach(e -> seen.add(e.getVolume().getVolumeId()));
      token = r.getNextToken();
      pages++;
      if (pages == 1) {
        // deleting an entry already returned does not disturb the listing
        f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(seen.getFirst()).build());
      }
    } while (!token.isEmpty());
    assertThat(pages).isEqualTo(3);
    assertThat(seen).containsExactlyInAnyOrderElementsOf(ids).isSorted();
    assertThat(listedVolumes()).hasSize(4);
    assertThat(code(() -> f.controller.listVolumes(ListVolumesRequest.newBuilder().setStartingToken("garbage!").build())))
        .isEqualTo(Code.ABORTED);
    assertThat(code(() -> f.controller.listVolumes(ListVolumesRequest.newBuilder().setMaxEntries(-1).build())))
        .isEqualTo(Code.INVALID_ARGUMENT);
  }

  @Test
  void snapshotsAreIdempotentAndGuardTheirSource() throws IOException {
    Volume v = createVolume("snapsrc", u(20));
    Volume other = createVolume("other", u(20));
    Snapshot s = f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(v.getVolumeId()).setName("s1").build()).getSnapshot();
    Snapshot again = f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(v.getVolumeId()).setName("s1").build()).getSnapshot();
    assertThat(again).isEqualTo(s);
    assertThat(s.getReadyToUse()).isTrue();
    assertThat(s.getSizeBytes()).isEqualTo(v.getCapacityBytes());
    assertThat(s.getSourceVolumeId()).isEqualTo(v.getVolumeId());
    Set<String> stored = f.storageObjects();
    assertThat(code(() -> f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(other.getVolumeId()).setName("s1").build())))
        .isEqualTo(Code.ALREADY_EXISTS);
    assertThat(code(() -> f.controller.createSnapshot(CreateSnapshotRequest.newBuilder()
        .setSourceVolumeId(f.backend.absentVolumeId(f.work)).setName("s2").build()))).isEqualTo(Code.NOT_FOUND);
    assertThat(code(() -> f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(v.getVolumeId()).setName("").build())))
        .isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(v.getVolumeId()).setName("s3")
        .putParameters("nope", "yes").build()))).isEqualTo(Code.INVALID_ARGUMENT);
    var busy = error(() -> f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build()));
    assertThat(busy.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(busy.getStatus().getDescription()).contains(s.getSnapshotId());
    assertThat(f.storageObjects()).as("refusals change nothing").isEqualTo(stored);

    // clones: from the snapshot and from the volume
    Volume fromSnap = f.controller.createVolume(create("from-snap", 0).clearCapacityRange().setVolumeContentSource(
        VolumeContentSource.newBuilder().setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(s.getSnapshotId()))).build()).getVolume();
    assertThat(fromSnap.getCapacityBytes()).isEqualTo(v.getCapacityBytes());
    assertThat(fromSnap.getContentSource().getSnapshot().getSnapshotId()).isEqualTo(s.getSnapshotId());
    Volume fromVol = f.controller.createVolume(create("from-vol", u(40)).setVolumeContentSource(
        VolumeContentSource.newBuilder().setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(v.getVolumeId()))).build()).getVolume();
    assertThat(fromVol.getCapacityBytes()).isEqualTo(u(40));
    assertThat(fromVol.getContentSource().getVolume().getVolumeId()).isEqualTo(v.getVolumeId());
    assertThat(code(() -> f.controller.createVolume(create("from-missing", u(20)).setVolumeContentSource(
        VolumeContentSource.newBuilder().setSnapshot(VolumeContentSource.SnapshotSource.newBuilder()
            .setSnapshotId(f.backend.absentSnapshotId(f.work)))).build())))
        .isEqualTo(Code.NOT_FOUND);
    assertThat(code(() -> f.controller.createVolume(create("too-small", 0).setCapacityRange(Caps.range(0, 10 * MIB)).setVolumeContentSource(
        VolumeContentSource.newBuilder().setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(s.getSnapshotId()))).build())))
        .isEqualTo(Code.OUT_OF_RANGE);

    // listing, filters, pagination
    f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(other.getVolumeId()).setName("s-other").build());
    assertThat(f.controller.listSnapshots(ListSnapshotsRequest.getDefaultInstance()).getEntriesCount()).isEqualTo(2);
    ListSnapshotsResponse bySource = f.controller.listSnapshots(ListSnapshotsRequest.newBuilder().setSourceVolumeId(v.getVolumeId()).build());
    assertThat(bySource.getEntriesList()).extracting(e -> e.getSnapshot().getSnapshotId()).containsExactly(s.getSnapshotId());
    assertThat(f.controller.listSnapshots(ListSnapshotsRequest.newBuilder().setSnapshotId(f.backend.absentSnapshotId(f.work)).build())
        .getEntriesCount()).isZero();
    ListSnapshotsResponse page1 = f.controller.listSnapshots(ListSnapshotsRequest.newBuilder().setMaxEntries(1).build());
    ListSnapshotsResponse page2 = f.controller.listSnapshots(ListSnapshotsRequest.newBuilder().setMaxEntries(1).setStartingToken(page1.getNextToken()).build());
    assertThat(page2.getNextToken()).isEmpty();
    assertThat(page2.getEntries(0).getSnapshot().getSnapshotId()).isNotEqualTo(page1.getEntries(0).getSnapshot().getSnapshotId());
    assertThat(code(() -> f.controller.listSnapshots(ListSnapshotsRequest.newBuilder().setStartingToken("nope").build()))).isEqualTo(Code.ABORTED);

    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(s.getSnapshotId()).build());
    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(s.getSnapshotId()).build());
    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(f.backend.absentSnapshotId(f.work)).build());
    // the clones are independent of the deleted snapshot and of their deleted source
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    for (Volume clone : List.of(fromSnap, fromVol)) {
      assertThat(f.controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(clone.getVolumeId()).build())
          .getStatus().getVolumeCondition().getAbnormal()).isFalse();
      assertThat(f.backend.storedSize(f.work, clone.getVolumeId())).isEqualTo(clone.getCapacityBytes());
    }
    assertThat(listedVolumes()).containsExactlyInAnyOrder(other.getVolumeId(), fromSnap.getVolumeId(), fromVol.getVolumeId());
  }

  @Test
  void expandGrowsOnly() throws IOException {
    Volume v = createVolume("grow", u(20));
    var r = f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setCapacityRange(Caps.bytes(u(64))).setVolumeCapability(Caps.mount("ext4")).build());
    assertThat(r.getCapacityBytes()).isEqualTo(u(64));
    assertThat(r.getNodeExpansionRequired()).isTrue();
    assertThat(f.backend.storedSize(f.work, v.getVolumeId())).isEqualTo(u(64));
    // again, and with a smaller request: idempotent, never shrinks
    assertThat(f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setCapacityRange(Caps.bytes(u(64))).build()).getCapacityBytes()).isEqualTo(u(64));
    assertThat(f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setCapacityRange(Caps.bytes(u(30))).build()).getCapacityBytes()).isEqualTo(u(64));
    assertThat(code(() -> f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setCapacityRange(Caps.range(u(30), u(40))).build()))).isEqualTo(Code.OUT_OF_RANGE);
    assertThat(code(() -> f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(f.backend.absentVolumeId(f.work)).setCapacityRange(Caps.bytes(u(64))).build()))).isEqualTo(Code.NOT_FOUND);
    assertThat(code(() -> f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build())))
        .isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(f.backend.storedSize(f.work, v.getVolumeId())).as("never shrunk").isEqualTo(u(64));
    assertThat(code(() -> f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).setCapacityRange(Caps.bytes(u(80))).setVolumeCapability(Caps.block()).build())))
        .as("block access to a volume created for mount access").isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(f.backend.storedSize(f.work, v.getVolumeId())).isEqualTo(u(64));
    // a block volume grows with no node step
    Volume raw = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("grow-raw")
        .addVolumeCapabilities(Caps.block()).setCapacityRange(Caps.bytes(u(20))).build()).getVolume();
    var block = f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(raw.getVolumeId())
        .setCapacityRange(Caps.bytes(u(80))).setVolumeCapability(Caps.block()).build());
    assertThat(block.getNodeExpansionRequired()).isFalse();
    assertThat(f.controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(raw.getVolumeId()).build())
        .getVolume().getCapacityBytes()).isEqualTo(u(80));
    assertThat(f.backend.storedSize(f.work, raw.getVolumeId())).isEqualTo(u(80));
  }

  @Test
  void capacityGetVolumeAndValidation() {
    var cap = f.controller.getCapacity(GetCapacityRequest.newBuilder().addVolumeCapabilities(Caps.mount("ext4")).build());
    assertThat(cap.getAvailableCapacity()).isPositive();
    assertThat(cap.getMaximumVolumeSize().getValue()).isPositive();
    assertThat(f.controller.getCapacity(GetCapacityRequest.newBuilder()
        .addVolumeCapabilities(Caps.mount("ext4", Mode.MULTI_NODE_READER_ONLY)).build()).getAvailableCapacity()).isZero();
    assertThat(f.controller.getCapacity(GetCapacityRequest.newBuilder()
        .setAccessibleTopology(Topology.newBuilder().putSegments("caravan.csi/node", "elsewhere")).build()).getAvailableCapacity()).isZero();
    assertThat(code(() -> f.controller.getCapacity(GetCapacityRequest.newBuilder().putParameters("nope", "1").build())))
        .isEqualTo(Code.INVALID_ARGUMENT);

    Volume v = createVolume("health", u(20));
    var got = f.controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    assertThat(got.getVolume()).isEqualTo(v);
    assertThat(got.getStatus().getVolumeCondition().getAbnormal()).isFalse();
    assertThat(got.getStatus().getPublishedNodeIdsList()).isEmpty();

    ValidateVolumeCapabilitiesResponse ok = f.controller.validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).addVolumeCapabilities(Caps.mount("")).addVolumeCapabilities(Caps.mount("ext4")).build());
    assertThat(ok.getConfirmed().getVolumeCapabilitiesList()).containsExactly(Caps.mount(""), Caps.mount("ext4"));
    ValidateVolumeCapabilitiesResponse no = f.controller.validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).addVolumeCapabilities(Caps.mount("", Mode.MULTI_NODE_SINGLE_WRITER)).build());
    assertThat(no.hasConfirmed()).isFalse();
    assertThat(no.getMessage()).contains("MULTI_NODE_SINGLE_WRITER");
    assertThat(code(() -> f.controller.validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
        .setVolumeId(f.backend.absentVolumeId(f.work)).addVolumeCapabilities(Caps.block()).build()))).isEqualTo(Code.NOT_FOUND);
    assertThat(code(() -> f.controller.validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).build()))).isEqualTo(Code.INVALID_ARGUMENT);
  }
}
