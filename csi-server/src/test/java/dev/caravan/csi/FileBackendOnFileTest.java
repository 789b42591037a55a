package dev.caravan.csi;

import static dev.caravan.csi.Caps.MIB;
import static dev.caravan.csi.GrpcOutcomes.code;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.Topology;
import dev.caravan.csi.v1.TopologyRequirement;
import dev.caravan.csi.v1.Volume;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.file.Files;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What only the file backend promises: its layout under the data directory (an image and a record
 * per volume and snapshot), sizes to the MiB or exact, and how it reports a lost image. The
 * behaviour every backend shares is in {@link ControllerConformance} and {@link NodeConformance}.
 */
class FileBackendOnFileTest {
  private PluginFixture f;

  @BeforeEach
  void start() throws IOException {
    f = PluginFixture.start(TestBackend.file());
  }

  @AfterEach
  void stop() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  private CreateVolumeRequest.Builder create(String name, long bytes) {
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(Caps.mount("ext4"))
        .setCapacityRange(Caps.bytes(bytes));
  }

  @Test
  void aVolumeIsAnImageAndARecordAndSoIsASnapshot() throws IOException {
    Volume v = f.controller.createVolume(create("db", 100 * MIB).build()).getVolume();
    String id = v.getVolumeId();
    assertThat(id).matches("vol-db-[0-9a-f]{12}");
    assertThat(f.storageObjects()).containsExactly("volumes/" + id + ".img", "volumes/" + id + ".meta");
    assertThat(Files.size(f.data.resolve("volumes/" + id + ".img"))).isEqualTo(100 * MIB);
    String snap = f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(id).setName("s").build())
        .getSnapshot().getSnapshotId();
    assertThat(snap).matches("snap-s-[0-9a-f]{12}");
    assertThat(f.storageObjects()).containsExactly("snapshots/" + snap + ".img", "snapshots/" + snap + ".meta",
        "volumes/" + id + ".img", "volumes/" + id + ".meta");
    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snap).build());
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(f.storageObjects()).isEmpty();
  }

  @Test
  void sizesRoundUpToTheMibOrAreExact() {
    assertThat(f.controller.createVolume(create("round", 100 * MIB + 1).build()).getVolume().getCapacityBytes())
        .isEqualTo(101 * MIB);
    assertThat(f.controller.createVolume(create("exact", 0).setCapacityRange(Caps.range(20 * MIB + 4096, 20 * MIB + 4096))
        .build()).getVolume().getCapacityBytes()).isEqualTo(20 * MIB + 4096);
  }

  @Test
  void aVolumeOnlyAnotherNodeMayHoldHasNoRoomHere() throws IOException {
    assertThat(code(() -> f.controller.createVolume(create("elsewhere", 20 * MIB).setAccessibilityRequirements(
        TopologyRequirement.newBuilder().addRequisite(Topology.newBuilder().putSegments("caravan.csi/node", "other"))).build())))
        .isEqualTo(Code.RESOURCE_EXHAUSTED);
    assertThat(f.storageObjects()).isEmpty();
  }

  @Test
  void aLostImageMakesTheVolumeAbnormal() throws IOException {
    Volume v = f.controller.createVolume(create("health", 20 * MIB).build()).getVolume();
    Files.delete(f.data.resolve("volumes/" + v.getVolumeId() + ".img"));
    var broken = f.controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    assertThat(broken.getStatus().getVolumeCondition().getAbnormal()).isTrue();
    assertThat(broken.getStatus().getVolumeCondition().getMessage()).contains("missing");
  }
}
