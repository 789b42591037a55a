package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.cli.Main;
import dev.caravan.csi.support.Json;
import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.observe.stats.UsageCollector;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.HostRequirements;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The observe API against a running plugin on real loop-backed ext4 volumes, through a real HTTP
 * client: usage figures after writing known amounts, 404/412/503, restart survival, /metrics parsed
 * back and checked against the operations performed, and the inspector's findings for each
 * disagreement injected behind the plugin's back.
 */
class ObserveTest {
  /** Background collection effectively off: the tests measure on demand, so nothing races them. */
  static final UsageCollector.Settings QUIET = new UsageCollector.Settings(Duration.ofHours(1), Duration.ofHours(1),
      Duration.ofHours(1), Duration.ofSeconds(30), 2, Duration.ofHours(2));

  private PluginFixture f;
  private final HttpClient http = HttpClient.newHttpClient();
  private final VolumeCapability cap = Caps.mount("ext4");

  @BeforeEach
  void setUp() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    f = PluginFixture.start(s -> s.withObserve(ObserveSettings.on(HttpSettings.loopback(0)).withStats(QUIET)));
  }

  @AfterEach
  void tearDown() throws IOException {
    http.close();
    if (f != null) {
      f.close();
    }
  }

  record Answer(int status, String body) {
    @SuppressWarnings("unchecked") // the API's objects are JSON objects
    Map<String, Object> json() {
      return (Map<String, Object>) Json.parse(body);
    }
  }

  private Answer get(String path) throws IOException, InterruptedException {
    int port = f.plugin().observability().httpAddress().orElseThrow().getPort();
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
    return new Answer(r.statusCode(), r.body());
  }

  private String create(String name) {
    return f.controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(64 * MIB)).build()).getVolume().getVolumeId();
  }

  private Path staging(String vol) throws IOException {
    return f.dir("staging/default/" + vol + "/rw");
  }

  private Path target(String vol) throws IOException {
    return f.dir("per-alloc/alloc-7/" + vol).resolve("rw");
  }

  private void stageAndPublish(String vol) throws IOException {
    f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging(vol).toString()).setVolumeCapability(cap).build());
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging(vol).toString()).setTargetPath(target(vol).toString())
        .setVolumeCapability(cap).build());
  }

  private void unpublishAndUnstage(String vol) throws IOException {
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(vol)
        .setTargetPath(target(vol).toString()).build());
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging(vol).toString()).build());
  }

  private static long num(Map<String, Object> m, String key) {
    return ((Number) m.get(key)).longValue();
  }

  @Test
  void usageAfterKnownWritesWithStatusCodesRestartAndMetrics() throws Exception {
    String vol = create("observed");
    String idle = create("idle");
    assertThat(get("/v1/volume-stats/" + idle).status()).as("exists, not staged here").isEqualTo(412);
    assertThat(get("/v1/volume-stats/vol-nope-000000000000").status()).isEqualTo(404);
    assertThat(get("/v1/volume-stats/..%2Fetc").status()).isEqualTo(400);

    stageAndPublish(vol);
    Answer first = get("/v1/volume-stats/" + vol);
    assertThat(first.status()).as(first.body()).isEqualTo(503);

    Map<String, Object> empty = measured(vol);
    // 3 directories x 10 files x 16 KiB, one symlink, one fifo
    Path t = target(vol);
    byte[] chunk = new byte[16 * 1024];
    for (int d = 0; d < 3; d++) {
      Path dir = Files.createDirectory(t.resolve("d" + d));
      for (int i = 0; i < 10; i++) {
        Files.write(dir.resolve("f" + i), chunk);
      }
    }
    Files.createSymbolicLink(t.resolve("link"), Path.of("d0/f0"));
    new ProcessBuilder("mkfifo", t.resolve("fifo").toString()).start().waitFor();
    try (var ch = java.nio.channels.FileChannel.open(t.resolve("d0/f0"), java.nio.file.StandardOpenOption.WRITE)) {
      ch.force(true);
    }
    new ProcessBuilder("sync", "-f", t.toString()).start().waitFor();

    Map<String, Object> s = measured(vol);
    assertThat(num(s, "file_count")).isEqualTo(30);
    assertThat(num(s, "directory_count")).as("d0..d2 and lost+found").isEqualTo(4);
    assertThat(num(s, "other_count")).as("symlink and fifo").isEqualTo(2);
    assertThat(num(s, "file_bytes")).isEqualTo(30 * 16 * 1024);
    assertThat(s.get("walk_complete")).isEqualTo(true);
    assertThat(num(s, "used_bytes") - num(empty, "used_bytes")).isGreaterThanOrEqualTo(30 * 16 * 1024);
    assertThat(num(empty, "used_inodes") + 35).isEqualTo(num(s, "used_inodes"));
    assertThat(num(s, "total_bytes")).isBetween(40 * MIB, 64 * MIB);
    assertThat(s.get("nomad_namespace")).isEqualTo("default");
    assertThat(s.get("nomad_volume_id")).isEqualTo(vol);
    assertThat(s.get("stale")).isEqualTo(false);
    assertThat(s.get("last_error")).isNull();

    Map<String, Object> list = get("/v1/volume-stats").json();
    assertThat((List<?>) list.get("volumes")).hasSize(1);
    assertThat(get("/v1/volume-stats?namespace=other").json().get("volumes")).isEqualTo(List.of());

    PromText m = PromText.parse(get("/metrics").body());
    assertThat(m.value("caravan_rpc_total", "method", "CreateVolume", "code", "OK")).isEqualTo(2);
    assertThat(m.value("caravan_rpc_total", "method", "NodeStageVolume", "code", "OK")).isEqualTo(1);
    assertThat(m.value("caravan_rpc_total", "method", "NodePublishVolume", "code", "OK")).isEqualTo(1);
    assertThat(m.value("caravan_rpc_duration_seconds_count", "method", "NodePublishVolume", "code", "OK")).isEqualTo(1);
    assertThat(m.value("caravan_rpc_duration_seconds_bucket", "method", "NodePublishVolume", "code", "OK", "le", "+Inf"))
        .isEqualTo(1);
    assertThat(m.value("caravan_backend_operations_total", "backend", "file", "op", "create", "outcome", "ok")).isEqualTo(2);
    assertThat(m.value("caravan_node_operations_total", "op", "format", "outcome", "formatted")).isEqualTo(1);
    assertThat(m.value("caravan_node_operations_total", "op", "attach", "outcome", "ok")).isEqualTo(1);
    assertThat(m.value("caravan_node_operations_total", "op", "mount", "outcome", "ok")).isEqualTo(1);
    assertThat(m.value("caravan_node_operations_total", "op", "bind", "outcome", "ok")).isEqualTo(1);
    assertThat(m.value("caravan_node_operation_duration_seconds_count", "op", "mount")).isEqualTo(1);
    assertThat(m.value("caravan_node_staged_volumes")).isEqualTo(1);
    assertThat(m.value("caravan_node_published_targets")).isEqualTo(1);
    assertThat(m.value("caravan_volume_files", "volume_id", vol, "nomad_namespace", "default")).isEqualTo(30);
    assertThat(m.value("caravan_volume_used_bytes", "volume_id", vol)).isEqualTo((double) num(s, "used_bytes"));
    assertThat(m.value("caravan_build_info", "driver", "file")).isEqualTo(1);
    assertThat(m.types).containsKey("jvm_memory_used_bytes").containsKey("process_cpu_seconds_total");
    assertThat(m.types.get("caravan_rpc_duration_seconds")).isEqualTo("histogram");
    assertThat(m.types.get("caravan_rpc_total")).isEqualTo("counter");

    // restart: the volume set is rebuilt from the journal and the mount table
    f.restart();
    Map<String, Object> again = measured(vol);
    assertThat(num(again, "file_count")).isEqualTo(30);
    assertThat(num(again, "used_bytes")).isEqualTo(num(s, "used_bytes"));
    PromText fresh = PromText.parse(get("/metrics").body());
    assertThat(fresh.valueOrZero("caravan_rpc_total", "method", "NodeStageVolume", "code", "OK")).isZero();
    assertThat(fresh.value("caravan_node_staged_volumes")).isEqualTo(1);

    unpublishAndUnstage(vol);
    assertThat(get("/v1/volume-stats/" + vol).status()).isEqualTo(412);
    PromText after = PromText.parse(get("/metrics").body());
    assertThat(after.value("caravan_node_operations_total", "op", "unmount", "outcome", "ok")).isEqualTo(2);
    assertThat(after.value("caravan_node_operations_total", "op", "detach", "outcome", "ok")).isEqualTo(1);
    assertThat(after.value("caravan_node_staged_volumes")).isZero();
    assertThat(after.find("caravan_volume_files")).isEmpty();
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(vol).build());
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(idle).build());
    assertThat(PromText.parse(get("/metrics").body())
        .value("caravan_backend_operations_total", "backend", "file", "op", "destroy", "outcome", "ok")).isEqualTo(2);
  }

  /** Measures now (statvfs and a full walk) and answers through the HTTP API. */
  private Map<String, Object> measured(String vol) throws Exception {
    f.plugin().observability().usage().measureNow(vol, true);
    Answer a = get("/v1/volume-stats/" + vol);
    assertThat(a.status()).as(a.body()).isEqualTo(200);
    return a.json();
  }

  @SuppressWarnings("unchecked") // JSON arrays of objects
  private static List<String> findingCodes(Map<String, Object> chain) {
    return ((List<Map<String, Object>>) chain.get("findings")).stream().map(m -> (String) m.get("code")).toList();
  }

  @Test
  void inspectorAgreesThenReportsEachInjectedDisagreement() throws Exception {
    String vol = create("inspected");
    stageAndPublish(vol);
    Map<String, Object> clean = get("/v1/volumes/" + vol + "/chain").json();
    assertThat(clean.get("agree")).as(Json.pretty(clean)).isEqualTo(true);
    assertThat(Json.write(clean)).as("no Nomad task API here").contains("\"nomad\":{\"state\":\"not-consulted\"");
    Answer text = get("/v1/volumes/" + vol + "/chain?format=text");
    assertThat(text.body()).contains("All layers agree.").contains("alloc-7");
    assertThat(get("/v1/volumes/vol-nope-000000000000/chain").status()).isEqualTo(404);
    String address = "http://127.0.0.1:" + f.plugin().observability().httpAddress().orElseThrow().getPort();
    assertThat(new CommandLine(new Main()).execute("inspect", vol, "--address", address)).isZero();
    assertThat(new CommandLine(new Main()).execute("inspect", "vol-nope-000000000000", "--address", address))
        .isEqualTo(3);

    // 1. the staging path unmounted behind the plugin's back (the publish bind stays)
    Mounts.unmount(staging(vol));
    Map<String, Object> c1 = get("/v1/volumes/" + vol + "/chain").json();
    assertThat(findingCodes(c1)).containsExactly("staging-not-mounted");
    assertThat(get("/v1/volume-stats/" + vol).status()).isEqualTo(412);
    assertThat(get("/v1/volumes/" + vol + "/chain?format=text").body())
        .contains("nothing is mounted there").contains("next: findmnt --mountpoint " + staging(vol));

    // 2. the loop device detached behind the plugin's back (after its last mount is gone)
    Mounts.unmount(target(vol));
    LoopDevice loop = f.ourLoops().getFirst();
    LoopDevices.detach(loop);
    Map<String, Object> c2 = get("/v1/volumes/" + vol + "/chain").json();
    assertThat(findingCodes(c2)).contains("device-detached", "staging-not-mounted", "publish-not-mounted");
    unpublishAndUnstage(vol); // the plugin still cleans up exactly
    assertThat(f.ourMounts()).isEmpty();

    // 3. the journal record deleted behind the plugin's back; then a restart forgets the volume
    stageAndPublish(vol);
    Path record = f.plugin().engine().journal().file(vol);
    Files.delete(record);
    Map<String, Object> c3 = get("/v1/volumes/" + vol + "/chain").json();
    assertThat(findingCodes(c3)).containsExactly("journal-record-missing");
    f.restart();
    Map<String, Object> c4 = get("/v1/volumes/" + vol + "/chain").json();
    assertThat(findingCodes(c4)).contains("mount-without-record", "device-without-record");
    assertThat(Json.write(c4)).contains(staging(vol).toString()).contains(target(vol).toString());
    // clean up by hand, as the finding says
    Mounts.unmount(target(vol));
    Mounts.unmount(staging(vol));
    f.ourLoops().forEach(LoopDevices::detach);
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(vol).build());
  }
}
