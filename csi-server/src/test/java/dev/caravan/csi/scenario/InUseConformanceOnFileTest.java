package dev.caravan.csi.scenario;

import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.mount.Mounts;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class InUseConformanceOnFileTest extends InUseConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }

  /** The file backend detaches a loop device at unstage: never from under a bind of its node. */
  @Test
  void unstageDoesNotDetachALoopDeviceBoundWhereTheJournalDoesNotKnow() throws Exception {
    VolumeCapability cap = Caps.block();
    String id = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("by-hand").addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(16 * Caps.MIB)).build()).getVolume().getVolumeId();
    Path staging = f.dir("staging/default/by-hand/rw-block-device-single-node-writer");
    f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setVolumeCapability(cap).build());
    LoopDevice loop = f.ourLoops().getFirst();
    Path byHand = Files.createFile(f.work.resolve("by-hand"));
    Mounts.bind(loop.device(), byHand, false);
    try {
      StatusRuntimeException e = error(() -> f.unstage(id, staging));
      assertThat(e.getStatus().getCode()).as("%s", e).isEqualTo(Code.FAILED_PRECONDITION);
      assertThat(e.getStatus().getDescription()).contains("bound at " + byHand);
      assertThat(f.ourLoops()).as("still attached under the bind").containsExactly(loop);
    } finally {
      Mounts.unmount(byHand);
    }
    f.unstage(id, staging);
    assertThat(f.ourLoops()).isEmpty();
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
  }
}
