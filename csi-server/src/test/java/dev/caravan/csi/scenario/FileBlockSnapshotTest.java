package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.Snapshot;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeContentSource;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.file.SparseFiles;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.HostRequirements;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The file backend's snapshot of a volume staged for block access: nothing can be frozen, so it is a
 * reflink of the image (a point-in-time copy of the device) or it is refused. Each test puts the data
 * directory on a filesystem of its own, made on a loop device: xfs with reflinks, ext4 without.
 */
class FileBlockSnapshotTest {
  private static final VolumeCapability BLOCK = Caps.block();

  private PluginFixture f;
  private LoopDevice dataDevice;

  /** A plugin whose data directory is a fresh {@code fs} filesystem (mkfs options {@code options}). */
  private void startOn(FsType fs, List<String> options) throws IOException {
    f = PluginFixture.unstarted(TestBackend.file());
    Path image = f.work.resolve("data-fs.img");
    SparseFiles.create(image, 512 * MIB);
    dataDevice = LoopDevices.attach(image, false);
    Filesystems.formatIfEmpty(dataDevice.device(), fs, options);
    Files.createDirectories(f.data);
    Mounts.mount(dataDevice.device(), f.data, fs.id(), Set.of(), "");
    f.startPlugin();
  }

  @AfterEach
  void stop() throws IOException {
    if (f == null) {
      return;
    }
    try {
      f.stopPlugin();
      for (var loop : f.ourLoops()) {
        LoopDevices.detach(loop); // a failed test's volumes; close() would report them, but after the unmount
      }
      if (MountTable.isMountPoint(f.data)) {
        Mounts.unmount(f.data);
      }
      if (dataDevice != null) {
        LoopDevices.detach(dataDevice);
      }
    } finally {
      f.close();
    }
  }

  @Test
  void withReflinksTheSnapshotIsTheDeviceAtOneInstant() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    HostRequirements.assumeXfs();
    startOn(FsType.XFS, List.of("-m", "reflink=1"));
    String id = createVolume("blk");
    Path staging = f.dir("staging/blk/rw");
    Path target = f.dir("per-alloc/a1/blk").resolve("rw");
    stage(id, staging);
    publish(id, staging, target);
    ControllerRulesConformance.writeAt(target, "before the snapshot");

    Snapshot s = f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(id).setName("blk-snap")
        .build()).getSnapshot();
    assertThat(s.getReadyToUse()).isTrue();
    ControllerRulesConformance.writeAt(target, "after the snapshot!");

    Volume copy = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("blk-copy").addVolumeCapabilities(BLOCK)
        .setVolumeContentSource(VolumeContentSource.newBuilder().setSnapshot(
            VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(s.getSnapshotId()))).build()).getVolume();
    Path copyStaging = f.dir("staging/blk-copy/rw");
    Path copyTarget = f.dir("per-alloc/a2/blk-copy").resolve("rw");
    stage(copy.getVolumeId(), copyStaging);
    publish(copy.getVolumeId(), copyStaging, copyTarget);
    assertThat(ControllerRulesConformance.readAt(copyTarget, "before the snapshot".length())).isEqualTo("before the snapshot");
    assertThat(ControllerRulesConformance.readAt(target, "after the snapshot!".length())).isEqualTo("after the snapshot!");

    release(copy.getVolumeId(), copyStaging, copyTarget);
    release(id, staging, target);
    deleteVolume(copy.getVolumeId());
    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(s.getSnapshotId()).build());
    deleteVolume(id);
  }

  @Test
  void withoutReflinksItIsRefusedAndLeavesNothing() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    startOn(FsType.EXT4, List.of());
    String id = createVolume("blk");
    Path staging = f.dir("staging/blk/rw");
    Path target = f.dir("per-alloc/a1/blk").resolve("rw");
    stage(id, staging);
    Set<String> before = f.storageObjects();

    StatusRuntimeException staged = error(() -> snapshot(id, "blk-snap"));
    assertThat(staged.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(staged.getStatus().getDescription())
        .contains("source_volume_id " + id)
        .contains("staged for block access at [" + staging + "]")
        .contains("cannot make reflinks")
        .contains("NodeUnpublishVolume, NodeUnstageVolume");
    publish(id, staging, target);
    assertThat(error(() -> snapshot(id, "blk-snap")).getStatus().getDescription()).contains("published at [" + target + "]");
    assertThat(f.storageObjects()).isEqualTo(before);
    assertThat(f.controller.listSnapshots(ListSnapshotsRequest.getDefaultInstance()).getEntriesList()).isEmpty();

    // released, nothing writes to it: a sparse copy is a faithful one
    release(id, staging, target);
    Snapshot s = snapshot(id, "blk-snap");
    assertThat(s.getReadyToUse()).isTrue();
    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(s.getSnapshotId()).build());
    deleteVolume(id);
  }

  private String createVolume(String name) {
    return f.controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(BLOCK)
        .setCapacityRange(Caps.bytes(32 * MIB)).build()).getVolume().getVolumeId();
  }

  private Snapshot snapshot(String id, String name) {
    return f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(id).setName(name).build())
        .getSnapshot();
  }

  private void deleteVolume(String id) {
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
  }

  private void stage(String id, Path staging) {
    f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setVolumeCapability(BLOCK).build());
  }

  private void publish(String id, Path staging, Path target) {
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setTargetPath(target.toString()).setVolumeCapability(BLOCK).build());
  }

  private void release(String id, Path staging, Path target) {
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString()).build());
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).build());
  }
}
