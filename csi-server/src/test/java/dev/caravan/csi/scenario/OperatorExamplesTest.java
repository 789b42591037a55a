package dev.caravan.csi.scenario;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.iscsi.IscsiMetricsScrape;
import dev.caravan.csi.support.Json;
import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.observe.metrics.PrometheusMetrics;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.testing.HostRequirements;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.InfoSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Grafana dashboard and the Prometheus alerting rules in examples/ against what Caravan really
 * exports: every metric they name is a family that a running file plugin registers (after a volume
 * was created, staged and published) or, for the qnap-only sweeper, that the sweeper registers. The
 * rules also pass {@code promtool check rules}, so Prometheus would load them.
 */
class OperatorExamplesTest {
  private static final Path EXAMPLES = Path.of("..", "examples");
  private static final Path RULES = EXAMPLES.resolve("prometheus/caravan-alerts.yml");
  private static final Path RULE_TESTS = EXAMPLES.resolve("prometheus/caravan-alerts-test.yml");
  private static final Path DASHBOARD = EXAMPLES.resolve("grafana/caravan-dashboard.json");
  /** A Caravan metric family in a PromQL expression (histogram series carry a suffix). */
  private static final Pattern CARAVAN_NAME = Pattern.compile("\\bcaravan_[a-z_]+");

  @TempDir Path tmp;

  @Test
  void everyMetricTheDashboardAndTheRulesNameIsOneCaravanExports() throws Exception {
    HostRequirements.assumeLoopAndExt4();
    Set<String> exported = new TreeSet<>();
    try (PluginFixture f = PluginFixture.start(s -> s.withObserve(ObserveSettings.on(HttpSettings.loopback(0))
        .withStats(ObserveTest.QUIET)))) {
      Runnable teardown = stageAndPublish(f);
      try {
        assertThat(scrape(f)).contains("caravan_rpc_total{");
        exported.addAll(families(((PrometheusMetrics) f.plugin().observability().metrics()).registry()));
      } finally {
        teardown.run();
      }
    }
    exported.addAll(families(IscsiMetricsScrape.registry(tmp.resolve("journal"))));

    List<String> exprs = new ArrayList<>(dashboardExpressions());
    exprs.add(Files.readString(RULES, StandardCharsets.UTF_8));
    Set<String> named = new TreeSet<>();
    for (String e : exprs) {
      Matcher m = CARAVAN_NAME.matcher(e);
      while (m.find()) {
        named.add(family(m.group()));
      }
    }
    assertThat(named).as("metrics the examples name").contains("caravan_rpc_total", "caravan_pool_online",
        "caravan_volume_used_bytes", "caravan_replication_lag_seconds", "caravan_replication_interval_seconds",
        "caravan_replication_failures_total");
    assertThat(exported).as("families exported by a file plugin and by the qnap sweeper").containsAll(named);
  }

  @Test
  void theAlertingRulesPassPromtool() throws Exception {
    Path promtool = Path.of("/usr/bin/promtool");
    Assumptions.assumeTrue(Files.isExecutable(promtool),
        "promtool is missing (Debian's prometheus package; scripts/install-deps installs it)");
    Process p = new ProcessBuilder(promtool.toString(), "check", "rules", RULES.toString())
        .redirectErrorStream(true).start();
    // Read before waiting: a child blocked on a full pipe would never exit.
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    assertThat(out).contains("SUCCESS");
  }

  /**
   * The replication rules' unit tests: a copy older than twice its volume's interval alerts, a fresh
   * one beside it does not, and failed rounds alert, each naming the volume and the node.
   */
  @Test
  void theReplicationAlertsFireOnLagOverTwiceTheIntervalAndOnFailures() throws Exception {
    Path promtool = Path.of("/usr/bin/promtool");
    Assumptions.assumeTrue(Files.isExecutable(promtool),
        "promtool is missing (Debian's prometheus package; scripts/install-deps installs it)");
    // Run from the rules' directory: the test file names them relative to itself.
    Process p = new ProcessBuilder(promtool.toString(), "test", "rules", RULE_TESTS.getFileName().toString())
        .directory(RULE_TESTS.getParent().toFile()).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(out).isZero();
    assertThat(out).contains("SUCCESS");
    assertThat(Files.readString(RULE_TESTS, StandardCharsets.UTF_8))
        .contains("alertname: CaravanReplicationLagging", "alertname: CaravanReplicationFailing");
  }

  /** Histogram series are named after their family with _bucket, _count or _sum. */
  private static String family(String series) {
    return series.replaceAll("_(bucket|count|sum)$", "");
  }

  /**
   * The series names of every family registered, samples or not: a file plugin has no pools, and a
   * gauge without samples is left out of the exposition, but its family is registered all the same.
   */
  private static Set<String> families(PrometheusRegistry registry) {
    Set<String> names = new TreeSet<>();
    for (MetricSnapshot s : registry.scrape()) {
      String name = s.getMetadata().getPrometheusName();
      names.add(switch (s) {
        case CounterSnapshot c -> name + "_total";
        case InfoSnapshot i -> name + "_info";
        default -> name;
      });
    }
    return names;
  }

  @SuppressWarnings("unchecked") // the dashboard is JSON objects and arrays
  private static List<String> dashboardExpressions() throws IOException {
    Map<String, Object> dash = (Map<String, Object>) Json.parse(Files.readString(DASHBOARD, StandardCharsets.UTF_8));
    List<String> exprs = new ArrayList<>();
    for (Object panel : (List<Object>) dash.get("panels")) {
      for (Object target : (List<Object>) ((Map<String, Object>) panel).get("targets")) {
        exprs.add((String) ((Map<String, Object>) target).get("expr"));
      }
    }
    Map<String, Object> templating = (Map<String, Object>) dash.get("templating");
    for (Object variable : (List<Object>) templating.get("list")) {
      Object query = ((Map<String, Object>) variable).get("query");
      if (query instanceof String q) {
        exprs.add(q);
      }
    }
    assertThat(exprs).as("the dashboard's queries").hasSizeGreaterThan(10);
    return exprs;
  }

  /** Creates, stages and publishes one volume; returns what unpublishes and unstages it. */
  private static Runnable stageAndPublish(PluginFixture f) throws IOException {
    VolumeCapability cap = Caps.mount("ext4");
    String vol = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("dashboard")
        .addVolumeCapabilities(cap).setCapacityRange(Caps.bytes(f.backend.sizeFor("ext4"))).build())
        .getVolume().getVolumeId();
    Path staging = f.dir("staging/default/" + vol + "/rw");
    f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(cap).build());
    Path target = f.dir("per-alloc/a1/" + vol).resolve("rw");
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).setVolumeCapability(cap).build());
    return () -> {
      f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(vol)
          .setTargetPath(target.toString()).build());
      f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(vol)
          .setStagingTargetPath(staging.toString()).build());
    };
  }

  private static String scrape(PluginFixture f) throws IOException, InterruptedException {
    int port = f.plugin().observability().httpAddress().orElseThrow().getPort();
    try (HttpClient http = HttpClient.newHttpClient()) {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
          .build(), HttpResponse.BodyHandlers.ofString());
      assertThat(r.statusCode()).isEqualTo(200);
      return r.body();
    }
  }
}
