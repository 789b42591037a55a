package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.peer.v1.CreateVolumeCall;
import dev.caravan.csi.peer.v1.DeleteVolumeCall;
import dev.caravan.csi.peer.v1.PeerGrpc;
import dev.caravan.csi.peer.v1.View;
import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The peer endpoint talks only mTLS, only with certificates of the peer CA that name a node of the
 * peer set, and a client only with the node it meant; refused calls change nothing, and a replayed
 * call changes nothing either.
 */
class PeerSecurityTest {
  private PeerCluster cluster;
  private String volume;

  @BeforeEach
  void start() throws Exception {
    cluster = PeerCluster.start("n1", "n2", "n3");
    volume = cluster.csi("n1").createVolume(PeersTest.create("guarded", "n1", 16 << 20)).getVolume().getVolumeId();
  }

  @AfterEach
  void stop() throws Exception {
    cluster.close();
  }

  /** Asks n1's peer endpoint, as a client holding {@code tls}, to delete the volume. */
  private Status.Code deleteThroughPeerEndpoint(Path tls, String meant, PeerAddress at) throws Exception {
    ManagedChannel ch = NettyChannelBuilder.forAddress(at.host(), at.port())
        .sslContext(PeerTls.client(PeerCa.open(tls), meant)).build();
    try {
      return GrpcOutcomes.code(() -> PeerGrpc.newBlockingStub(ch).withDeadlineAfter(5, TimeUnit.SECONDS)
          .deleteVolume(DeleteVolumeCall.newBuilder().setIdempotencyKey("k-" + System.nanoTime())
              .setRequest(DeleteVolumeRequest.newBuilder().setVolumeId(volume)).build()));
    } finally {
      ch.shutdownNow();
    }
  }

  private void assertVolumeIntact() throws Exception {
    assertThat(cluster.files("n1", "volumes")).contains(volume + ".img");
    assertThat(cluster.csi("n2").controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(volume)
        .build()).getVolume().getVolumeId()).isEqualTo(volume);
  }

  @Test
  void aLegitimatePeerIsServed() throws Exception {
    // The control case for the refusals below: n2's own credentials delete n1's volume through n1.
    assertThat(deleteThroughPeerEndpoint(cluster.node("n2").tls(), "n1", cluster.node("n1").address()))
        .isEqualTo(Status.Code.OK);
    assertThat(cluster.files("n1", "volumes")).isEmpty();
  }

  @Test
  void aCertificateFromAnotherCaIsRefused() throws Exception {
    Path tls = cluster.work.resolve("other-ca");
    PeerCa.write(tls, new PeerCa("someone else's CA").issue("n2"), cluster.ca.cert);
    assertThat(deleteThroughPeerEndpoint(tls, "n1", cluster.node("n1").address())).isEqualTo(Status.Code.UNAVAILABLE);
    assertVolumeIntact();
  }

  @Test
  void anExpiredCertificateIsRefused() throws Exception {
    Path tls = cluster.work.resolve("expired");
    Instant now = Instant.now();
    PeerCa.write(tls, cluster.ca.issue("n2", now.minus(2, ChronoUnit.DAYS), now.minus(1, ChronoUnit.DAYS)),
        cluster.ca.cert);
    assertThat(deleteThroughPeerEndpoint(tls, "n1", cluster.node("n1").address())).isEqualTo(Status.Code.UNAVAILABLE);
    assertVolumeIntact();
  }

  @Test
  void aValidCertificateForANodeOutsideThePeerSetIsRefused() throws Exception {
    Path tls = cluster.work.resolve("intruder");
    PeerCa.write(tls, cluster.ca.issue("n9"), cluster.ca.cert);
    assertThat(deleteThroughPeerEndpoint(tls, "n1", cluster.node("n1").address())).isEqualTo(Status.Code.UNAVAILABLE);
    assertVolumeIntact();
  }

  @Test
  void aClientTalksOnlyToTheNodeItMeant() throws Exception {
    // n2 means n1 but reaches n3's endpoint (a stale or hijacked address): n3's certificate names n3.
    assertThat(deleteThroughPeerEndpoint(cluster.node("n2").tls(), "n1", cluster.node("n3").address()))
        .isEqualTo(Status.Code.UNAVAILABLE);
    assertVolumeIntact();
  }

  @Test
  void aPlainTextClientIsRefused() throws Exception {
    PeerAddress at = cluster.node("n1").address();
    ManagedChannel ch = NettyChannelBuilder.forAddress(at.host(), at.port()).usePlaintext().build();
    try {
      assertThat(GrpcOutcomes.code(() -> PeerGrpc.newBlockingStub(ch).withDeadlineAfter(5, TimeUnit.SECONDS)
          .deleteVolume(DeleteVolumeCall.newBuilder().setIdempotencyKey("plain")
              .setRequest(DeleteVolumeRequest.newBuilder().setVolumeId(volume)).build())))
          .isNotEqualTo(Status.Code.OK);
    } finally {
      ch.shutdownNow();
    }
    assertVolumeIntact();
  }

  @Test
  void aRenewedCaFileTakesEffectWithoutRestart() throws Exception {
    // A second CA's certificate for n2 is refused until n1's CA file also holds that CA.
    PeerCa second = new PeerCa("rotated CA");
    Path tls = cluster.work.resolve("rotated");
    PeerCa.write(tls, second.issue("n2"), cluster.ca.cert);
    assertThat(deleteThroughPeerEndpoint(tls, "n1", cluster.node("n1").address())).isEqualTo(Status.Code.UNAVAILABLE);
    assertVolumeIntact();
    PeerCluster.Node n1 = cluster.node("n1");
    PeerCa.write(n1.tls(), cluster.ca.issue("n1"), cluster.ca.cert, second.cert);
    assertThat(deleteThroughPeerEndpoint(tls, "n1", n1.address())).isEqualTo(Status.Code.OK);
    assertThat(cluster.files("n1", "volumes")).isEmpty();
  }

  @Test
  void aReplayedCallChangesNothing() throws Exception {
    PeerAddress at = cluster.node("n1").address();
    ManagedChannel ch = NettyChannelBuilder.forAddress(at.host(), at.port())
        .sslContext(PeerTls.client(PeerCa.open(cluster.node("n2").tls()), "n1")).build();
    try {
      PeerGrpc.PeerBlockingStub peer = PeerGrpc.newBlockingStub(ch);
      CreateVolumeCall call = CreateVolumeCall.newBuilder().setIdempotencyKey("create-once")
          .setRequest(PeersTest.create("replayed", "n1", 16 << 20).toBuilder().removeParameters("host"))
          .setView(View.newBuilder().setNode("n2").setFingerprint(HomeAuthority.fingerprint(Set.of("n1", "n2", "n3"))))
          .build();
      String id = peer.withDeadlineAfter(5, TimeUnit.SECONDS).createVolume(call).getVolume().getVolumeId();
      cluster.csi("n3").deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
      assertThat(cluster.files("n1", "volumes")).doesNotContain(id + ".img");

      // The same call again answers as the first time, and does not make the deleted volume again.
      assertThat(peer.withDeadlineAfter(5, TimeUnit.SECONDS).createVolume(call).getVolume().getVolumeId())
          .isEqualTo(id);
      assertThat(cluster.files("n1", "volumes")).doesNotContain(id + ".img");

      StatusRuntimeException reused = GrpcOutcomes.error(() -> peer.withDeadlineAfter(5, TimeUnit.SECONDS)
          .createVolume(call.toBuilder().setRequest(call.getRequest().toBuilder().setName("other")).build()));
      assertThat(reused.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
      assertThat(cluster.files("n1", "volumes")).doesNotContain(id + ".img");

      StatusRuntimeException noDeadline = GrpcOutcomes.error(() -> peer.createVolume(
          call.toBuilder().setIdempotencyKey("no-deadline").build()));
      assertThat(noDeadline.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
      assertThat(noDeadline.getStatus().getDescription()).contains("deadline");
      assertThat(cluster.files("n1", "volumes")).doesNotContain(id + ".img");
    } finally {
      ch.shutdownNow();
    }
  }

  @Test
  void anOwnerRefusesAnIdOfAnotherNode() throws Exception {
    String onN2 = cluster.csi("n3").createVolume(PeersTest.create("elsewhere", "n2", 16 << 20)).getVolume().getVolumeId();
    PeerAddress at = cluster.node("n1").address();
    ManagedChannel ch = NettyChannelBuilder.forAddress(at.host(), at.port())
        .sslContext(PeerTls.client(PeerCa.open(cluster.node("n3").tls()), "n1")).build();
    try {
      StatusRuntimeException e = GrpcOutcomes.error(() -> PeerGrpc.newBlockingStub(ch)
          .withDeadlineAfter(5, TimeUnit.SECONDS).deleteVolume(DeleteVolumeCall.newBuilder().setIdempotencyKey("x")
              .setRequest(DeleteVolumeRequest.newBuilder().setVolumeId(onN2)).build()));
      assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
      assertThat(e.getStatus().getDescription()).contains("belongs to node n2");
    } finally {
      ch.shutdownNow();
    }
    assertThat(cluster.files("n2", "volumes")).contains(onN2 + ".img");
  }
}
