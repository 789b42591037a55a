package dev.caravan.csi.scenario;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.support.Json;
import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.observe.nomad.NomadClient;
import dev.caravan.csi.observe.nomad.NomadClient.NomadException;
import dev.caravan.csi.testing.NomadFake;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Answering by Nomad volume id and namespace, through Nomad's task API (a faithful fake on a unix socket). */
class NomadLookupTest {
  private static final String TOKEN = "wi-jwt.header.payload.signature";

  @TempDir Path dir;
  private NomadFake nomad;
  private PluginFixture f;

  @AfterEach
  void tearDown() throws IOException {
    if (f != null) {
      f.close();
    }
    if (nomad != null) {
      nomad.close();
    }
  }

  private NomadClient client(String token) {
    return new NomadClient(nomad.socket, () -> Optional.of(token), Duration.ofSeconds(5));
  }

  @Test
  void clientReadsCsiVolumesWithTheWorkloadIdentity() throws Exception {
    nomad = new NomadFake(dir.resolve("api.sock"), TOKEN);
    nomad.addVolume("prod", "web data", "vol-web-0123456789ab");
    NomadClient c = client(TOKEN);
    assertThat(c.readCsiVolume("prod", "web data").orElseThrow().externalId()).isEqualTo("vol-web-0123456789ab");
    assertThat(nomad.requests.getLast()).isEqualTo("GET /v1/volume/csi/web%20data?namespace=prod HTTP/1.1");
    nomad.chunked = false;
    assertThat(c.readCsiVolume("prod", "web data").orElseThrow().namespace()).isEqualTo("prod");
    assertThat(c.readCsiVolume("default", "web data")).isEmpty();
    assertThatThrownBy(() -> client("wrong-token").readCsiVolume("prod", "web data"))
        .isInstanceOf(NomadException.class).hasMessageContaining("403").hasMessageNotContaining("wrong-token");

    // the token file is re-read on every call (Nomad renews workload identities)
    Path tokenFile = Files.writeString(dir.resolve("nomad_token"), "stale-token\n");
    NomadClient fromFile = new NomadClient(nomad.socket, NomadClient.tokenFrom(tokenFile, null), Duration.ofSeconds(5));
    assertThatThrownBy(() -> fromFile.readCsiVolume("prod", "web data")).isInstanceOf(NomadException.class);
    Files.writeString(tokenFile, TOKEN + "\n");
    assertThat(fromFile.readCsiVolume("prod", "web data")).isPresent();

    assertThat(NomadClient.fromEnvironment(Map.of())).isEmpty();
    assertThat(NomadClient.fromEnvironment(Map.of("NOMAD_SECRETS_DIR", dir.toString())).orElseThrow().socket())
        .isEqualTo(dir.resolve("api.sock"));
  }

  @Test
  void statsAndChainAnswerByNomadVolumeId() throws Exception {
    nomad = new NomadFake(dir.resolve("api.sock"), TOKEN);
    f = PluginFixture.start(s -> s.withObserve(ObserveSettings.on(HttpSettings.loopback(0)).withStats(ObserveTest.QUIET)
        .withNomad(Optional.of(client(TOKEN)))));
    String vol = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("by-nomad-id")
        .addVolumeCapabilities(Caps.mount("ext4")).setCapacityRange(Caps.bytes(32 * Caps.MIB)).build())
        .getVolume().getVolumeId();
    nomad.addVolume("prod", "db", vol);
    int port = f.plugin().observability().httpAddress().orElseThrow().getPort();
    try (HttpClient http = HttpClient.newHttpClient()) {
      HttpResponse<String> byNomad = http.send(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + port + "/v1/volume-stats/db?namespace=prod")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(byNomad.statusCode()).as("known through Nomad, not staged here").isEqualTo(412);
      assertThat(byNomad.body()).contains(vol);
      HttpResponse<String> chain = http.send(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + port + "/v1/volumes/db/chain?namespace=prod")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(chain.statusCode()).isEqualTo(200);
      assertThat(((Map<?, ?>) Json.parse(chain.body())).get("volume_id")).isEqualTo(vol);
      assertThat(chain.body()).doesNotContain(TOKEN);
      HttpResponse<String> unknown = http.send(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + port + "/v1/volume-stats/db?namespace=dev")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(unknown.statusCode()).isEqualTo(404);
      nomad.close();
      HttpResponse<String> down = http.send(HttpRequest.newBuilder(
          URI.create("http://127.0.0.1:" + port + "/v1/volume-stats/db?namespace=prod")).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(down.statusCode()).as(down.body()).isEqualTo(502);
      assertThat(down.body()).doesNotContain(TOKEN);
    }
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(vol).build());
  }
}
