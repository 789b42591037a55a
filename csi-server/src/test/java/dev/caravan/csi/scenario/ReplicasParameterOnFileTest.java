package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.v1.CreateVolumeRequest;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The replication parameters over the socket on the file backend, which does not replicate: replicas
 * are refused naming the backend that does, and nothing is made; {@code replicas=0} is what every
 * volume is.
 */
class ReplicasParameterOnFileTest {
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

  private static CreateVolumeRequest.Builder create(String name) {
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(Caps.mount("ext4"))
        .setCapacityRange(Caps.bytes(32 * MIB));
  }

  @Test
  void replicasAreRefusedNamingTheBackendThatReplicatesAndNothingIsMade() throws IOException {
    StatusRuntimeException e = GrpcOutcomes.error(() -> f.controller.createVolume(create("v")
        .putParameters("replicas", "1").putParameters("replicationInterval", "30s").build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(e.getStatus().getDescription()).contains("parameters.replicas 1 cannot be honoured")
        .contains("the local backend (ZFS) does");
    assertThat(f.storageObjects()).isEmpty();
    StatusRuntimeException bad = GrpcOutcomes.error(() -> f.controller.createVolume(create("v")
        .putParameters("replicas", "many").build()));
    assertThat(bad.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(bad.getStatus().getDescription()).contains("parameters.replicas");
  }

  @Test
  void noReplicaIsWhatEveryVolumeIs() {
    String id = f.controller.createVolume(create("v").putParameters("replicas", "0").build()).getVolume().getVolumeId();
    assertThat(id).isNotEmpty();
  }
}
