package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.testing.NomadFake;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.observe.nomad.NomadClient;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.Volume;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Plugin instances that find each other through Nomad's service registrations (a faithful fake). */
class NomadDiscoveryTest {
  private static final String SERVICE = "caravan-peer";

  private PeerCluster cluster;
  private NomadFake nomad;

  @AfterEach
  void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
    if (nomad != null) {
      nomad.close();
    }
  }

  private PeerCluster startThroughNomad(Path dir, String token) throws Exception {
    nomad = new NomadFake(dir.resolve("api.sock"), "workload-identity");
    Map<String, Long> reserves = new LinkedHashMap<>();
    for (String n : new String[] {"n1", "n2", "n3"}) {
      reserves.put(n, 0L);
    }
    return PeerCluster.start(reserves, (self, others) -> {
      others.forEach((node, at) -> register("default", SERVICE, node, at));
      NomadClient client = new NomadClient(nomad.socket, () -> Optional.of(token), Duration.ofSeconds(5));
      return new NomadPeers(client, "default", SERVICE, self, Duration.ZERO, Clock.systemUTC());
    });
  }

  @Test
  void instancesFindEachOtherThroughNomadServiceRegistrations(@TempDir Path dir) throws Exception {
    cluster = startThroughNomad(dir, "workload-identity");
    Volume v = cluster.csi("n3").createVolume(PeersTest.create("found", "n1", 16 << 20)).getVolume();
    assertThat(PeersTest.nodeOf(v)).isEqualTo("n1");
    assertThat(cluster.files("n1", "volumes")).contains(v.getVolumeId() + ".img");
    assertThat(cluster.csi("n2").listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
        .extracting(e -> e.getVolume().getVolumeId()).containsExactly(v.getVolumeId());
    assertThat(nomad.requests).contains("GET /v1/service/" + SERVICE + "?namespace=default HTTP/1.1");
  }

  @Test
  void withoutAValidTokenThePeersAreUnknownAndNothingIsCreated(@TempDir Path dir) throws Exception {
    cluster = startThroughNomad(dir, "not-the-token");
    StatusRuntimeException e = GrpcOutcomes.error(() -> cluster.csi("n1").createVolume(
        PeersTest.create("nowhere", "auto", 16 << 20)));
    assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    assertThat(e.getStatus().getDescription()).contains("Nomad service " + SERVICE).contains("403")
        .contains("read-job").doesNotContain("not-the-token");
    for (String n : new String[] {"n1", "n2", "n3"}) {
      assertThat(cluster.files(n, "volumes")).isEmpty();
    }
  }

  @Test
  void theSetIsCachedRefreshedAndKeptWhenNomadIsAway(@TempDir Path dir) throws Exception {
    nomad = new NomadFake(dir.resolve("api.sock"), "t");
    MutableClock clock = new MutableClock();
    NomadPeers peers = new NomadPeers(new NomadClient(nomad.socket, () -> Optional.of("t"), Duration.ofSeconds(5)),
        "default", SERVICE, "n1", Duration.ofSeconds(30), clock);
    register("default", SERVICE, "n1", new PeerAddress("10.0.0.1", 9700));
    register("default", SERVICE, "n2", new PeerAddress("10.0.0.2", 9700));
    register("other", SERVICE, "n9", new PeerAddress("10.0.0.9", 9700));
    assertThat(peers.current()).isEqualTo(Map.of("n2", new PeerAddress("10.0.0.2", 9700)));

    register("default", SERVICE, "n3", new PeerAddress("10.0.0.3", 9700));
    assertThat(peers.current()).containsOnlyKeys("n2"); // cached
    clock.advance(Duration.ofSeconds(31));
    assertThat(peers.current()).containsOnlyKeys("n2", "n3");

    nomad.close();
    Files.deleteIfExists(nomad.socket);
    clock.advance(Duration.ofSeconds(31));
    assertThat(peers.current()).containsOnlyKeys("n2", "n3"); // the last answer, while Nomad is away

    NomadPeers fresh = new NomadPeers(new NomadClient(nomad.socket, () -> Optional.of("t"), Duration.ofSeconds(5)),
        "default", SERVICE, "n1", Duration.ofSeconds(30), clock);
    assertThatThrownBy(fresh::current).isInstanceOf(CsiException.class).hasMessageContaining("cannot be read from Nomad");
  }

  private static final class MutableClock extends Clock {
    private Instant now = Instant.parse("2026-01-01T00:00:00Z");

    void advance(Duration d) {
      now = now.plus(d);
    }

    @Override
    public Instant instant() {
      return now;
    }

    @Override
    public java.time.ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      return this;
    }
  }

  /** The plugin allocation on {@code node} registers the peer service, tagged with its CSI node id. */
  private void register(String namespace, String service, String node, PeerAddress at) {
    nomad.registerService(namespace, service, "alloc-" + node, "node-uuid-" + node, List.of(NomadPeers.NODE_TAG + node),
        at.host(), at.port());
  }
}
