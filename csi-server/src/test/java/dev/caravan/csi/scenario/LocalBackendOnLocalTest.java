package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.code;
import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.scenario.TestBackend.LocalTestBackend;
import dev.caravan.csi.scenario.TestBackend.Zfs;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.GetCapacityRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.Snapshot;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeContentSource;
import dev.caravan.storage.mount.MountTable;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What only the {@code local} backend promises, against real OpenZFS in the guest of {@code
 * scripts/guest-suite} (skipped elsewhere, each test naming why): how zvols are named and marked,
 * its parameters, that it never touches a zvol it did not create, that it refuses another node's
 * work, and that a plugin killed with a staged zvol is finished by the next one. The lifecycle every
 * backend shares runs here too, in {@link NodeConformanceOnLocalTest} and {@link
 * ControllerConformanceOnLocalTest}. The {@code zfs} command is only the oracle, and the way to make
 * a foreign zvol.
 */
class LocalBackendOnLocalTest {
  private PluginFixture f;

  @BeforeEach
  void start() throws IOException {
    f = PluginFixture.unstarted(TestBackend.local());
  }

  @AfterEach
  void stop() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  private String parent() {
    return LocalTestBackend.parentDataset(f.work);
  }

  private Volume create(String name, long bytes, VolumeCapability cap, Map<String, String> params) {
    return f.controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(bytes)).putAllParameters(params).build()).getVolume();
  }

  private void stage(String id, Path staging, VolumeCapability cap) {
    f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setVolumeCapability(cap).build());
  }

  private void publish(String id, Path staging, Path target, VolumeCapability cap) {
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setTargetPath(target.toString()).setVolumeCapability(cap).build());
  }

  private void unpublish(String id, Path target) {
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString()).build());
  }

  private void unstage(String id, Path staging) {
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString()).build());
  }

  @Test
  void zvolsAreNamedMarkedAndShapedByTheParameters() throws IOException {
    f.startPlugin();
    VolumeCapability cap = Caps.mount("ext4");
    Volume src = create("props-src", 64 * MIB, cap, Map.of("volblocksize", "16K"));
    assertThat(src.getVolumeId()).startsWith("local/v1/" + PluginFixture.NODE + "/" + parent() + "/vol-props-src-");
    String dataset = src.getVolumeContextMap().get("dataset");
    assertThat(dataset).isEqualTo(LocalTestBackend.dataset(src.getVolumeId()));
    assertThat(Zfs.get("caravan:managed", dataset)).isEqualTo("true");
    assertThat(Zfs.get("caravan:csi-name", dataset)).isEqualTo("props-src");
    assertThat(Zfs.get("volblocksize", dataset)).isEqualTo("16384");
    assertThat(Long.parseLong(Zfs.get("refreservation", dataset))).as("thick by default").isGreaterThanOrEqualTo(64 * MIB);
    // sizes round up to the volblocksize; sparse means no reservation
    Volume odd = create("props-odd", 20 * MIB + 1, Caps.block(), Map.of("volblocksize", "64K", "sparse", "true"));
    assertThat(odd.getCapacityBytes()).isEqualTo(20 * MIB + 64 * 1024);
    assertThat(Zfs.get("refreservation", odd.getVolumeContextMap().get("dataset"))).isIn("0", "none");

    Snapshot snap = f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setName("props-snap")
        .setSourceVolumeId(src.getVolumeId()).build()).getSnapshot();
    assertThat(snap.getSnapshotId()).startsWith(src.getVolumeId() + "@snap-props-snap-");
    Volume fromSnap = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("props-clone")
        .addVolumeCapabilities(cap).setVolumeContentSource(VolumeContentSource.newBuilder()
            .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snap.getSnapshotId())))
        .build()).getVolume();
    Volume fromVol = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("props-copy")
        .addVolumeCapabilities(cap).setVolumeContentSource(VolumeContentSource.newBuilder()
            .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(src.getVolumeId())))
        .build()).getVolume();
    // clones are send/receive copies, not ZFS clones: no origin ties them to their source
    for (Volume clone : new Volume[] {fromSnap, fromVol}) {
      assertThat(Zfs.get("origin", clone.getVolumeContextMap().get("dataset"))).isEqualTo("-");
      assertThat(Zfs.get("volblocksize", clone.getVolumeContextMap().get("dataset"))).as("kept from the source").isEqualTo("16384");
    }
    assertThat(Zfs.run("zfs", "list", "-H", "-t", "snapshot", "-o", "name", "-r", dataset))
        .as("the temporary snapshot of a volume-to-volume clone is gone").doesNotContain("@clone-");

    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snap.getSnapshotId()).build());
    for (Volume v : new Volume[] {src, odd, fromSnap, fromVol}) {
      f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    }
    assertThat(f.storageObjects()).isEmpty();
  }

  /** A copy of a volume in use is taken frozen: it holds what was written just before, unsynced. */
  @Test
  void aCopyOfAVolumeInUseHoldsWhatWasWrittenBeforeIt() throws IOException {
    f.startPlugin();
    VolumeCapability cap = Caps.mount("ext4");
    Volume src = create("busy-src", 32 * MIB, cap, Map.of());
    Path staging = f.dir("staging/busy-src");
    Path target = f.dir("per-alloc/a/busy-src").resolve("rw");
    stage(src.getVolumeId(), staging, cap);
    publish(src.getVolumeId(), staging, target, cap);
    Files.writeString(target.resolve("unsynced.txt"), "written just before the copy");
    Volume copy = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("busy-copy")
        .addVolumeCapabilities(cap).setVolumeContentSource(VolumeContentSource.newBuilder()
            .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(src.getVolumeId())))
        .build()).getVolume();
    Files.writeString(target.resolve("after.txt"), "writes work again after the copy");
    unpublish(src.getVolumeId(), target);
    unstage(src.getVolumeId(), staging);
    Path copyStaging = f.dir("staging/busy-copy");
    stage(copy.getVolumeId(), copyStaging, cap);
    assertThat(copyStaging.resolve("unsynced.txt")).hasContent("written just before the copy");
    assertThat(copyStaging.resolve("after.txt")).doesNotExist();
    unstage(copy.getVolumeId(), copyStaging);
    for (Volume v : new Volume[] {src, copy}) {
      f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    }
  }

  @Test
  void refusalsNameWhatIsWrongAndChangeNothing() throws IOException {
    f.startPlugin();
    VolumeCapability cap = Caps.mount("ext4");
    Volume v = create("refusals", 32 * MIB, cap, Map.of());
    var before = f.storageObjects();

    var unknown = error(() -> create("bad", 32 * MIB, cap, Map.of("poool", LocalTestBackend.POOL)));
    assertThat(unknown.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(unknown.getStatus().getDescription()).contains("[poool]")
        .contains("[compression, encryption, fsType, host, pool, replicaNodes, replicas, replicationInterval, sparse, volblocksize]");
    assertThat(error(() -> create("bad", 32 * MIB, cap, Map.of("pool", "rpool"))).getStatus().getDescription())
        .contains("parameters.pool 'rpool' is not an allowed pool");
    // another node's work: a plugin without peers tells the caller which node to ask
    var elsewhere = error(() -> create("bad", 32 * MIB, cap, Map.of("host", "other-node")));
    assertThat(elsewhere.getStatus().getCode()).isEqualTo(Code.UNAVAILABLE);
    assertThat(elsewhere.getStatus().getDescription()).contains("other-node");
    String foreignNode = v.getVolumeId().replace("/" + PluginFixture.NODE + "/", "/other-node/");
    var owned = error(() -> f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(foreignNode).build()));
    assertThat(owned.getStatus().getCode()).isEqualTo(Code.UNAVAILABLE);
    assertThat(owned.getStatus().getDescription()).contains("node other-node");
    assertThat(f.storageObjects()).isEqualTo(before);

    // a zvol Caravan did not create, with a name like ours, is never destroyed or modified
    String foreignDataset = parent() + "/vol-foreign-0123456789ab";
    Zfs.run("zfs", "create", "-V", "16M", foreignDataset);
    String foreignId = "local/v1/" + PluginFixture.NODE + "/" + foreignDataset;
    var unmanaged = error(() -> f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(foreignId).build()));
    assertThat(unmanaged.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(unmanaged.getStatus().getDescription()).contains("not created by Caravan");
    assertThat(code(() -> f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(foreignId).setCapacityRange(Caps.bytes(32 * MIB)).build()))).isEqualTo(Code.NOT_FOUND);
    assertThat(code(() -> f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setName("foreign-snap")
        .setSourceVolumeId(foreignId).build()))).isEqualTo(Code.NOT_FOUND);
    assertThat(code(() -> stage(foreignId, f.dir("staging/foreign"), cap))).isEqualTo(Code.NOT_FOUND);
    assertThat(f.controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
        .extracting(e -> e.getVolume().getVolumeId()).containsExactly(v.getVolumeId());
    assertThat(Zfs.get("volsize", foreignDataset)).isEqualTo(Long.toString(16 * MIB));
    assertThat(Zfs.run("zfs", "list", "-H", "-t", "snapshot", "-o", "name", "-r", foreignDataset)).isEmpty();
    assertThat(f.ourMounts()).isEmpty();
    Zfs.run("zfs", "destroy", foreignDataset);

    // Capacity is what the pool has left (no reserve configured). The pool's free space moves by a few
    // kilobytes between two reads while ZFS frees the destroyed zvol and writes metadata in the
    // background: the answer lies between the oracle's reads before and after it, give or take 1 MiB.
    long freeBefore = Long.parseLong(Zfs.get("available", LocalTestBackend.POOL));
    long available = f.controller.getCapacity(GetCapacityRequest.getDefaultInstance()).getAvailableCapacity();
    long freeAfter = Long.parseLong(Zfs.get("available", LocalTestBackend.POOL));
    assertThat(available).isPositive().isBetween(Math.min(freeBefore, freeAfter) - MIB, Math.max(freeBefore, freeAfter) + MIB);
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
  }

  @Test
  void killDashNineWithAStagedZvolAndTheNextPluginFinishesTheJob() throws Exception {
    VolumeCapability cap = Caps.mount("ext4");
    Volume v;
    Path staging = f.dir("staging/survivor");
    Path target = f.dir("per-alloc/c").resolve("survivor");
    try (PluginProcess first = PluginProcess.start(f)) {
      v = create("survivor", 32 * MIB, cap, Map.of());
      stage(v.getVolumeId(), staging, cap);
      publish(v.getVolumeId(), staging, target, cap);
      Files.writeString(target.resolve("before-crash.txt"), "durable");
      assertThat(first.kill()).isEqualTo(137);
    }
    assertThat(MountTable.isMountPoint(staging)).isTrue();
    assertThat(MountTable.isMountPoint(target)).isTrue();

    // The next plugin runs in this JVM: only the killed one needs a process of its own, and a second
    // JVM start costs tens of seconds under the guest's emulated CPU.
    f.startPlugin();
    var stats = f.node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setVolumePath(target.toString()).build());
    assertThat(stats.getVolumeCondition().getAbnormal()).isFalse();
    assertThat(Files.readString(target.resolve("before-crash.txt"))).isEqualTo("durable");
    assertThat(code(() -> f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build())))
        .as("in use").isEqualTo(Code.FAILED_PRECONDITION);
    unpublish(v.getVolumeId(), target);
    unstage(v.getVolumeId(), staging);
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    assertThat(f.storageObjects()).isEmpty();
    assertThat(f.ourMounts()).isEmpty();
  }
}
