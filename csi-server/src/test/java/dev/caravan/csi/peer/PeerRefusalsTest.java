package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.observe.metrics.Metrics;
import dev.caravan.csi.peer.v1.NodeLayersCall;
import dev.caravan.csi.peer.v1.PeerGrpc;
import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslProvider;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.assertj.core.api.ThrowableAssert;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Each refused handshake is logged and counted by the node that refuses it (with the peer's address,
 * the certificate it presented and the rule it broke), and the calling node's error says the
 * certificate was refused, not that the node cannot be reached.
 */
class PeerRefusalsTest {
  private static final String REFUSALS = "caravan_peer_refusals_total";

  private PeerCluster cluster;
  private CapturedLog log;

  @BeforeEach
  void start() {
    log = new CapturedLog();
  }

  @AfterEach
  void stop() throws Exception {
    log.close();
    if (cluster != null) {
      cluster.close();
    }
  }

  private static NodeLayersCall layers() {
    return NodeLayersCall.newBuilder().setIdempotencyKey("k-" + System.nanoTime()).setVolumeId("vol-x.n1").build();
  }

  /** What a PeerClient holding the credentials in {@code tls} says when it calls n1. */
  private String callerMessage(Path tls) throws Exception {
    PeerCluster.Node n1 = cluster.node("n1");
    try (PeerClient c = new PeerClient("n1", n1.address(), PeerCa.open(tls), Duration.ofSeconds(5),
        new RefusalLog("caller", Metrics.NONE, Clock.systemUTC()))) {
      CsiException e = (CsiException) org.assertj.core.api.Assertions.catchThrowable(
          () -> c.call("Retry.", (stub, key) -> stub.nodeLayers(layers())));
      assertThat(e).as("the call was refused").isNotNull();
      return e.getMessage();
    }
  }

  private static String volumeOn(PeerCluster c, String node) {
    return c.csi(node).createVolume(PeersTest.create("v-" + System.nanoTime(), node, 16 << 20)).getVolume()
        .getVolumeId();
  }

  @Test
  void aCertificateOfAnotherCaIsLoggedAndCountedWhereItIsRefusedAndTheCallerSaysItWasRefused() throws Exception {
    cluster = PeerCluster.start("n1", "n2");
    String onN2 = volumeOn(cluster, "n2");
    // n1 presents a certificate of another CA (it still trusts the cluster CA, so it accepts n2).
    PeerCa.writeLeaf(cluster.node("n1").tls(), new PeerCa("someone else's CA").issue("n1"));

    StatusRuntimeException e = GrpcOutcomes.error(() -> cluster.csi("n1").controllerGetVolume(
        ControllerGetVolumeRequest.newBuilder().setVolumeId(onN2).build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(e.getStatus().getDescription()).contains("node n2 refused our certificate")
        .doesNotContain("cannot be reached");

    assertThat(log.matching("node n2 refused", "127.0.0.1", "CN=n1", "[n1]", "does not chain to the peer CA"))
        .hasSize(1);
    assertThat(cluster.metric("n2", REFUSALS, "reason=\"unknown_ca\"")).isEqualTo(1);
  }

  @Test
  void aCertificateForANodeOutsideThePeerSetIsLoggedAndCounted() throws Exception {
    cluster = PeerCluster.start("n1", "n2");
    Path tls = cluster.work.resolve("intruder");
    PeerCa.write(tls, cluster.ca.issue("n9"), cluster.ca.cert);

    assertThat(callerMessage(tls)).contains("node n1 refused our certificate").doesNotContain("cannot be reached");
    assertThat(log.matching("node n1 refused", "127.0.0.1", "CN=n9", "[n9]", "not a node of its peer set"))
        .hasSize(1);
    assertThat(cluster.metric("n1", REFUSALS, "reason=\"not_a_peer\"")).isEqualTo(1);
  }

  @Test
  void anExpiredCertificateIsLoggedAndCounted() throws Exception {
    cluster = PeerCluster.start("n1", "n2");
    Path tls = cluster.work.resolve("expired");
    Instant now = Instant.now();
    PeerCa.write(tls, cluster.ca.issue("n2", now.minus(2, ChronoUnit.DAYS), now.minus(1, ChronoUnit.DAYS)),
        cluster.ca.cert);

    assertThat(callerMessage(tls)).contains("node n1 refused our certificate").doesNotContain("cannot be reached");
    assertThat(log.matching("node n1 refused", "127.0.0.1", "CN=n2", "[n2]", "expired")).hasSize(1);
    assertThat(cluster.metric("n1", REFUSALS, "reason=\"expired\"")).isEqualTo(1);
  }

  @Test
  void aClientWithoutCertificateIsLoggedAndCounted() throws Exception {
    cluster = PeerCluster.start("n1", "n2");
    PeerAddress at = cluster.node("n1").address();
    ManagedChannel ch = NettyChannelBuilder.forAddress(at.host(), at.port()).sslContext(GrpcSslContexts.configure(
        SslContextBuilder.forClient().trustManager(cluster.ca.cert).protocols("TLSv1.3"), SslProvider.JDK).build())
        .overrideAuthority("n1").build();
    try {
      assertThat(GrpcOutcomes.code(() -> PeerGrpc.newBlockingStub(ch).withDeadlineAfter(5, TimeUnit.SECONDS)
          .nodeLayers(layers()))).isNotEqualTo(Status.Code.OK);
    } finally {
      ch.shutdownNow();
    }
    assertThat(log.matching("node n1 refused", "127.0.0.1", "presented no certificate")).hasSize(1);
    assertThat(cluster.metric("n1", REFUSALS, "reason=\"no_certificate\"")).isEqualTo(1);
  }

  @Test
  void plainTextIsLoggedOncePerMinuteAndCountedEveryTime() throws Exception {
    cluster = PeerCluster.start("n1", "n2");
    PeerAddress at = cluster.node("n1").address();
    for (int i = 0; i < 3; i++) {
      ManagedChannel ch = NettyChannelBuilder.forAddress(at.host(), at.port()).usePlaintext().build();
      try {
        assertThat(GrpcOutcomes.code(() -> PeerGrpc.newBlockingStub(ch).withDeadlineAfter(5, TimeUnit.SECONDS)
            .nodeLayers(layers()))).isNotEqualTo(Status.Code.OK);
      } finally {
        ch.shutdownNow();
      }
    }
    assertThat(log.matching("node n1 refused", "127.0.0.1", "plain text")).hasSize(1);
    assertThat(cluster.metric("n1", REFUSALS, "reason=\"plaintext\"")).isEqualTo(3);
  }

  @Test
  void aServerCertificateForAnotherNodeIsRefusedByTheCallerWhichSaysWhichNodeItNames() throws Exception {
    // Once the volume is made, n1's peer set has n2 at n3's address (a stale or hijacked address): n3
    // answers there with its own certificate.
    Map<String, Long> reserves = new LinkedHashMap<>();
    for (String n : new String[] {"n1", "n2", "n3"}) {
      reserves.put(n, 0L);
    }
    AtomicBoolean stale = new AtomicBoolean();
    cluster = PeerCluster.start(reserves, (self, others) -> () -> {
      Map<String, PeerAddress> set = new LinkedHashMap<>(others);
      if (self.equals("n1") && stale.get()) {
        set.put("n2", others.get("n3"));
      }
      return set;
    });
    String onN2 = volumeOn(cluster, "n2");
    stale.set(true);

    ThrowableAssert.ThrowingCallable get = () -> cluster.csi("n1").controllerGetVolume(
        ControllerGetVolumeRequest.newBuilder().setVolumeId(onN2).build());
    StatusRuntimeException e = GrpcOutcomes.error(get::call);
    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(e.getStatus().getDescription()).contains("node n2 presented a certificate for n3, not n2")
        .doesNotContain("cannot be reached");
    assertThat(log.matching("node n1 refused", "127.0.0.1:" + cluster.node("n3").port, "CN=n3", "[n3]")).hasSize(1);
    assertThat(cluster.metric("n1", REFUSALS, "reason=\"wrong_node\"")).isEqualTo(1);
  }
}
