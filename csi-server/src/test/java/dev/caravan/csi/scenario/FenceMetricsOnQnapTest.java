package dev.caravan.csi.scenario;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.ControllerUnpublishVolumeRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.junit.jupiter.api.Test;

/**
 * The fence's counters through a real plugin on the qnap backend (the simulated appliance), driven
 * over gRPC as Nomad drives it, read from the plugin's own /metrics: each ControllerPublish the fence
 * refuses, and the ControllerUnpublish of the holder that lifts the fence.
 */
class FenceMetricsOnQnapTest {
  private static final String A = "iqn.2026-01.dev.caravan.test:node-a";
  private static final String B = "iqn.2026-01.dev.caravan.test:node-b";

  private static PromText scrape(PluginFixture f) throws IOException, InterruptedException {
    int port = f.plugin().observability().httpAddress().orElseThrow().getPort();
    try (HttpClient http = HttpClient.newHttpClient()) {
      return PromText.parse(http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
          .build(), HttpResponse.BodyHandlers.ofString()).body());
    }
  }

  private static ControllerPublishVolumeRequest publish(String vol, String node) {
    return ControllerPublishVolumeRequest.newBuilder().setVolumeId(vol).setNodeId(node)
        .setVolumeCapability(Caps.mount("ext4")).build();
  }

  private static ControllerUnpublishVolumeRequest unpublish(String vol, String node) {
    return ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(vol).setNodeId(node).build();
  }

  @Test
  void aRefusedPublishAndTheDetachThatLiftsTheFenceAreCounted() throws Exception {
    TestBackend qnap = TestBackend.qnap();
    qnap.assumeAvailable();
    try (PluginFixture f = PluginFixture.start(qnap,
        s -> s.withObserve(ObserveSettings.on(HttpSettings.loopback(0)).withStats(ObserveTest.QUIET)))) {
      String vol = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("fenced")
          .addVolumeCapabilities(Caps.mount("ext4")).setCapacityRange(Caps.bytes(1L << 30)).build())
          .getVolume().getVolumeId();
      f.controller.controllerPublishVolume(publish(vol, A));
      StatusRuntimeException refused = org.junit.jupiter.api.Assertions.assertThrows(StatusRuntimeException.class,
          () -> f.controller.controllerPublishVolume(publish(vol, B)));
      assertThat(refused.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
      assertThat(refused.getStatus().getDescription()).contains(A);
      PromText fenced = scrape(f);
      assertThat(fenced.value("caravan_fenced_publishes_total", "backend", "qnap")).isEqualTo(1);
      assertThat(fenced.valueOrZero("caravan_forced_detaches_total", "backend", "qnap")).isZero();
      assertThat(fenced.types.get("caravan_fenced_publishes_total")).isEqualTo("counter");

      f.controller.controllerUnpublishVolume(unpublish(vol, A)); // what `nomad volume detach` of A sends
      f.controller.controllerPublishVolume(publish(vol, B));
      f.controller.controllerUnpublishVolume(unpublish(vol, B)); // an ordinary unpublish: B fenced nobody out
      PromText after = scrape(f);
      assertThat(after.value("caravan_forced_detaches_total", "backend", "qnap")).isEqualTo(1);
      assertThat(after.value("caravan_fenced_publishes_total", "backend", "qnap")).isEqualTo(1);
      assertThat(after.value("caravan_rpc_total", "method", "ControllerPublishVolume", "code", "FAILED_PRECONDITION"))
          .isEqualTo(1);
      f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(vol).build());
    }
  }
}
