package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.cli.Main;
import dev.caravan.csi.support.Json;
import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.testing.HostRequirements;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code caravan stats} against a running plugin's HTTP server, on real loop-backed ext4 volumes. */
class StatsCommandTest {
  private PluginFixture f;
  private final VolumeCapability cap = Caps.mount("ext4");

  @BeforeEach
  void setUp() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    f = PluginFixture.start(s -> s.withObserve(ObserveSettings.on(HttpSettings.loopback(0))
        .withStats(ObserveTest.QUIET)));
  }

  @AfterEach
  void tearDown() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  private record Out(int exit, String out, String err) {}

  private Out stats(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cli = new CommandLine(new Main());
    cli.setOut(new PrintWriter(out, true));
    cli.setErr(new PrintWriter(err, true));
    String[] all = new String[args.length + 3];
    all[0] = "stats";
    System.arraycopy(args, 0, all, 1, args.length);
    all[args.length + 1] = "--address";
    all[args.length + 2] = address();
    return new Out(cli.execute(all), out.toString(), err.toString());
  }

  private String address() {
    return "http://127.0.0.1:" + f.plugin().observability().httpAddress().orElseThrow().getPort();
  }

  @SuppressWarnings("unchecked") // the API's objects are JSON objects
  private Map<String, Object> api(String path) throws IOException, InterruptedException {
    try (HttpClient http = HttpClient.newHttpClient()) {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(address() + path)).build(),
          HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
      return (Map<String, Object>) Json.parse(r.body());
    }
  }

  /** Staging and target paths of what the test staged, to take down again. */
  private final List<String[]> staged = new ArrayList<>();

  private void teardownVolumes() {
    for (String[] v : staged) {
      f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(v[0]).setTargetPath(v[2]).build());
      f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(v[0]).setStagingTargetPath(v[1]).build());
      f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v[0]).build());
    }
    staged.clear();
  }

  private String stagedVolume(String name) throws IOException {
    String vol = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(64 * MIB)).build()).getVolume().getVolumeId();
    Path staging = f.dir("staging/default/" + vol + "/rw");
    Path target = f.dir("per-alloc/alloc-1/" + vol).resolve("rw");
    f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(cap).build());
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).setVolumeCapability(cap).build());
    staged.add(new String[] {vol, staging.toString(), target.toString()});
    Files.write(target.resolve("data"), new byte[3 * (int) MIB]);
    return vol;
  }

  private static List<String> cells(String table, String vol) {
    String line = table.lines().filter(l -> l.startsWith(vol)).findFirst().orElseThrow();
    return Arrays.asList(line.split("\\s{2,}", -1));
  }

  @Test
  void printsTheUsageApiAsATable() throws Exception {
    Out none = stats();
    assertThat(none.exit()).as(none.err()).isZero();
    assertThat(none.out()).startsWith("no volume is staged on node ");

    String a = stagedVolume("stats-a");
    String b = stagedVolume("stats-b");
    f.plugin().observability().usage().measureNow(a, true);
    f.plugin().observability().usage().measureNow(b, true);
    Map<String, Object> api = api("/v1/volume-stats/" + a);

    Out all = stats("--bytes");
    assertThat(all.exit()).as(all.err()).isZero();
    assertThat(all.out().lines().findFirst().orElseThrow())
        .startsWith("VOLUME").contains("SIZE", "USED", "AVAIL", "USE%", "FILES");
    assertThat(all.out()).contains(a, b);
    List<String> row = cells(all.out(), a);
    assertThat(row.get(1)).isEqualTo("default/" + a);
    assertThat(row.get(2)).isEqualTo("mount");
    assertThat(row.get(3)).isEqualTo(String.valueOf(api.get("total_bytes")));
    assertThat(row.get(4)).isEqualTo(String.valueOf(api.get("used_bytes")));
    assertThat(row.get(5)).isEqualTo(String.valueOf(api.get("available_bytes")));
    assertThat(row.get(8)).as("the data file").isEqualTo("1");
    assertThat(((Number) api.get("used_bytes")).longValue()).isGreaterThanOrEqualTo(3 * MIB);

    Out one = stats(a);
    assertThat(one.exit()).as(one.err()).isZero();
    assertThat(one.out().lines().count()).as(one.out()).isEqualTo(2);
    List<String> human = cells(one.out(), a);
    assertThat(human.get(3)).matches("[0-9]+\\.[0-9]MiB");
    assertThat(human.get(6)).matches("[0-9]+%");

    Out json = stats(a, "--json");
    assertThat(json.exit()).isZero();
    assertThat(((Map<?, ?>) Json.parse(json.out())).get("volume_id")).isEqualTo(a);

    Out missing = stats("vol-nope-000000000000");
    assertThat(missing.exit()).isEqualTo(3);
    teardownVolumes();
  }

  @Test
  void saysWhereItLookedWhenNoPluginAnswers() throws IOException {
    StringWriter out = new StringWriter();
    CommandLine cli = new CommandLine(new Main());
    cli.setOut(new PrintWriter(out, true));
    // A port from the fixture's plugin, closed with it: nothing listens there any more.
    String closed = address();
    f.close();
    f = null;
    assertThat(cli.execute("stats", "--address", closed)).isEqualTo(1);
  }
}
