package dev.caravan.csi.scenario.model;

import static io.grpc.Status.Code.FAILED_PRECONDITION;
import static io.grpc.Status.Code.NOT_FOUND;
import static io.grpc.Status.Code.OK;

import dev.caravan.csi.scenario.Caps;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeExpandVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.Set;

/**
 * The bad requests a model run sends, each about one of its volumes: a REQUIRED field missing
 * (INVALID_ARGUMENT, §1.1), a path outside every allowed root or not absolute (INVALID_ARGUMENT, the
 * general invalid-value row), NodePublish without staging_target_path (FAILED_PRECONDITION, its own
 * row). When the same call would also fail for the volume's state (unknown id, not staged), the spec
 * names no order between the two (§3): that code is allowed too.
 */
final class ModelBadInput {
  /** How many variants {@link #send} knows. */
  static final int VARIANTS = 16;
  /** The variant that asks NodeGetVolumeStats about a path under the mount root that is not the volume's. */
  static final int STATS_OF_A_PATH_NOT_THE_VOLUMES = 14;

  private ModelBadInput() {}

  static void send(ModelDriver d, ModelStep s) throws IOException {
    ModelState m = d.m;
    String name = s.vol();
    ModelState.Vol v = m.volumes.get(name);
    String id = d.idOf(name);
    boolean block = v != null && v.block;
    VolumeCapability cap = ModelDriver.cap(block, v == null ? 0 : v.mode);
    Path staging = d.staging(name);
    Path target = d.target(name, 0, block);
    Path out = d.outside.resolve(name + "/t");
    switch (s.n()) {
      case 0 -> d.bad("NodeStageVolume without volume_id", ModelDriver.INVALID, () -> d.nodeStub().nodeStageVolume(
          NodeStageVolumeRequest.newBuilder().setStagingTargetPath(staging.toString()).setVolumeCapability(cap).build()));
      case 1 -> d.bad("NodeStageVolume without volume_capability", orState(ModelSpec.stage(m, name, false, ModelStep.Secret.NONE)),
          () -> d.nodeStub().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
              .setStagingTargetPath(staging.toString()).build()));
      case 2 -> d.bad("NodePublishVolume with target_path outside the allowed roots",
          orState(ModelSpec.publish(m, name, 0, false)), () -> d.nodeStub().nodePublishVolume(
              NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
                  .setTargetPath(out.toString()).setVolumeCapability(cap).build()));
      case 3 -> {
        Set<Code> state = ModelSpec.publish(m, name, 0, false);
        Set<Code> allowed = EnumSet.copyOf(ModelSpec.publishWithoutStaging());
        state.stream().filter(c -> c != OK && c != io.grpc.Status.Code.ALREADY_EXISTS).forEach(allowed::add);
        d.bad("NodePublishVolume without staging_target_path", allowed, () -> d.nodeStub().nodePublishVolume(
            NodePublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString())
                .setVolumeCapability(cap).build()));
      }
      case 4 -> d.bad("NodeUnpublishVolume without target_path", ModelDriver.INVALID, () -> d.nodeStub()
          .nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).build()));
      case 5 -> d.bad("CreateVolume without name", ModelDriver.INVALID, () -> d.controller().createVolume(
          CreateVolumeRequest.newBuilder().addVolumeCapabilities(cap).setCapacityRange(Caps.bytes(d.baseBytes()))
              .build()));
      case 6 -> d.bad("CreateVolume without volume_capabilities", ModelDriver.INVALID, () -> d.controller()
          .createVolume(CreateVolumeRequest.newBuilder().setName(name).setCapacityRange(Caps.bytes(d.baseBytes()))
              .build()));
      case 7 -> d.bad("DeleteVolume without volume_id", ModelDriver.INVALID, () -> d.controller().deleteVolume(
          DeleteVolumeRequest.getDefaultInstance()));
      case 8 -> d.bad("CreateSnapshot without source_volume_id", ModelDriver.INVALID, () -> d.controller()
          .createSnapshot(CreateSnapshotRequest.newBuilder().setName("bad-" + name).build()));
      case 9 -> d.bad("ControllerExpandVolume without capacity_range", orState(ModelSpec.controllerExpand(m, name)),
          () -> d.controller().controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(id)
              .build()));
      case 10 -> d.bad("NodeStageVolume with staging_target_path outside the allowed roots",
          orState(ModelSpec.stage(m, name, false, ModelStep.Secret.NONE)), () -> d.nodeStub().nodeStageVolume(NodeStageVolumeRequest
              .newBuilder().setVolumeId(id).setStagingTargetPath(out.toString()).setVolumeCapability(cap).build()));
      case 11 -> d.bad("NodeUnstageVolume without staging_target_path", ModelDriver.INVALID, () -> d.nodeStub()
          .nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id).build()));
      case 12 -> d.bad("NodeExpandVolume without volume_path", orState(EnumSet.of(v == null ? NOT_FOUND : OK)),
          () -> d.nodeStub().nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(id).build()));
      case 13 -> d.bad("NodePublishVolume with a relative target_path", orState(ModelSpec.publish(m, name, 0, false)),
          () -> d.nodeStub().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
              .setStagingTargetPath(staging.toString()).setTargetPath("per-alloc/" + name + "/relative")
              .setVolumeCapability(cap).build()));
      case STATS_OF_A_PATH_NOT_THE_VOLUMES -> {
        Path elsewhere = d.f.dir("per-alloc/elsewhere");
        d.bad("NodeGetVolumeStats of a path that is not the volume's", ModelSpec.atVolumePath(m, name, false),
            () -> d.nodeStub().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id)
                .setVolumePath(elsewhere.toString()).build()));
      }
      default -> d.bad("DeleteSnapshot without snapshot_id", ModelDriver.INVALID, () -> d.controller()
          .deleteSnapshot(DeleteSnapshotRequest.getDefaultInstance()));
    }
  }

  /** INVALID_ARGUMENT, or the error the state alone would give (no order between them is stated). */
  private static Set<Code> orState(Set<Code> state) {
    EnumSet<Code> s = EnumSet.copyOf(ModelDriver.INVALID);
    state.stream().filter(c -> c != OK).forEach(s::add);
    if (state.contains(FAILED_PRECONDITION)) {
      s.add(FAILED_PRECONDITION);
    }
    return s;
  }
}
