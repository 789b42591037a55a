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
 * The replication parameters over the socket on the file backend of a plugin without peers: replicas
 * are refused naming what they need (other nodes, over the peer channel), and nothing is made; the
 * values are checked by the rules the local backend's are; {@code replicas=0} is what every volume is.
 * Replication itself between peers: {@code dev.caravan.csi.peer.ReplicationOnFileTest}.
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
  void replicasWithoutPeersAreRefusedNamingWhatTheyNeedAndNothingIsMade() throws IOException {
    StatusRuntimeException e = GrpcOutcomes.error(() -> f.controller.createVolume(create("v")
        .putParameters("replicas", "1").putParameters("replicationInterval", "30s").build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(e.getStatus().getDescription()).contains("parameters.replicas 1 needs other nodes to hold the copies")
        .contains("no peers (--peer-listen)");
    assertThat(f.storageObjects()).isEmpty();
    StatusRuntimeException bad = GrpcOutcomes.error(() -> f.controller.createVolume(create("v")
        .putParameters("replicas", "many").build()));
    assertThat(bad.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(bad.getStatus().getDescription()).contains("parameters.replicas 'many' must be a whole number");
    StatusRuntimeException tooOften = GrpcOutcomes.error(() -> f.controller.createVolume(create("v")
        .putParameters("replicas", "1").putParameters("replicationInterval", "2s").build()));
    assertThat(tooOften.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(tooOften.getStatus().getDescription()).contains("parameters.replicationInterval '2s'")
        .contains("at least 5s");
    StatusRuntimeException alone = GrpcOutcomes.error(() -> f.controller.createVolume(create("v")
        .putParameters("replicaNodes", "n2").build()));
    assertThat(alone.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(alone.getStatus().getDescription()).contains("parameters.replicaNodes applies only to a replicated volume");
    assertThat(f.storageObjects()).isEmpty();
  }

  @Test
  void noReplicaIsWhatEveryVolumeIs() {
    String id = f.controller.createVolume(create("v").putParameters("replicas", "0").build()).getVolume().getVolumeId();
    assertThat(id).isNotEmpty();
  }
}
