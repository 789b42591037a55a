package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.peer.v1.DeleteVolumeCall;
import dev.caravan.csi.peer.v1.NodeLayersCall;
import dev.caravan.csi.peer.v1.PeerGrpc;
import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A change of the certificate, key or CA files reaches the connections already open, in both
 * directions: one whose peer no longer passes the new files serves no further call, and one that
 * does carries on.
 */
class PeerRotationTest {
  private PeerCluster cluster;

  @BeforeEach
  void start() throws Exception {
    cluster = PeerCluster.start("n1", "n2");
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  /** A channel to n1's peer endpoint holding n2's credentials, as n2's plugin would open it. */
  private ManagedChannel asN2ToN1() throws Exception {
    PeerAddress at = cluster.node("n1").address();
    return NettyChannelBuilder.forAddress(at.host(), at.port())
        .sslContext(PeerTls.client(PeerCa.open(cluster.node("n2").tls()), "n1")).build();
  }

  private static PeerGrpc.PeerBlockingStub stub(ManagedChannel ch) {
    return PeerGrpc.newBlockingStub(ch).withDeadlineAfter(5, TimeUnit.SECONDS);
  }

  private static NodeLayersCall layers(String volume) {
    return NodeLayersCall.newBuilder().setIdempotencyKey("k-" + System.nanoTime()).setVolumeId(volume).build();
  }

  @Test
  void aConnectionOpenedBeforeTheCaChangedServesNoFurtherCallOnTheServingNode() throws Exception {
    String volume = cluster.csi("n1").createVolume(PeersTest.create("kept", "n1", 16 << 20)).getVolume().getVolumeId();
    ManagedChannel ch = asN2ToN1();
    try {
      assertThat(stub(ch).nodeLayers(layers(volume)).getNode()).isEqualTo("n1");

      // n1 now trusts only a new CA: n2's certificate no longer chains to it.
      PeerCa.writeCa(cluster.node("n1").tls(), new PeerCa("replacement CA").cert);

      StatusRuntimeException e = GrpcOutcomes.error(() -> stub(ch).deleteVolume(DeleteVolumeCall.newBuilder()
          .setIdempotencyKey("after-rotation").setRequest(DeleteVolumeRequest.newBuilder().setVolumeId(volume))
          .build()));
      assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
      // The refusal itself, not the cut connection: the caller learns why, as from any other refusal.
      assertThat(e.getStatus().getDescription()).contains("is no longer accepted");
      assertThat(cluster.files("n1", "volumes")).contains(volume + ".img");
    } finally {
      ch.shutdownNow();
    }
  }

  @Test
  void aConnectionOpenedBeforeTheCaChangedServesNoFurtherCallOnTheCallingNode() throws Exception {
    String volume = cluster.csi("n2").createVolume(PeersTest.create("theirs", "n2", 16 << 20)).getVolume()
        .getVolumeId();
    // n1 reaches n2 once: its connection to n2 is open.
    assertThat(cluster.csi("n1").controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(volume)
        .build()).getVolume().getVolumeId()).isEqualTo(volume);

    // n1 now trusts only a new CA: n2's certificate no longer chains to it, so n1 must not talk to n2.
    PeerCa.writeCa(cluster.node("n1").tls(), new PeerCa("replacement CA").cert);

    StatusRuntimeException e = GrpcOutcomes.error(() -> cluster.csi("n1").deleteVolume(
        DeleteVolumeRequest.newBuilder().setVolumeId(volume).build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(e.getStatus().getDescription()).contains("node n2").doesNotContain("cannot be reached");
    assertThat(cluster.files("n2", "volumes")).contains(volume + ".img");
  }

  @Test
  void aRenewedCertificateFromTheSameCaKeepsPeersTalking() throws Exception {
    String volume = cluster.csi("n1").createVolume(PeersTest.create("renewed", "n1", 16 << 20)).getVolume()
        .getVolumeId();
    ManagedChannel ch = asN2ToN1();
    try {
      assertThat(stub(ch).nodeLayers(layers(volume)).getNode()).isEqualTo("n1");
      PeerCa.writeLeaf(cluster.node("n1").tls(), cluster.ca.issue("n1"));
      PeerCa.writeLeaf(cluster.node("n2").tls(), cluster.ca.issue("n2"));
      assertThat(stub(ch).nodeLayers(layers(volume)).getNode()).isEqualTo("n1");
      assertThat(cluster.csi("n2").controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(volume)
          .build()).getVolume().getVolumeId()).isEqualTo(volume);
    } finally {
      ch.shutdownNow();
    }
  }
}
