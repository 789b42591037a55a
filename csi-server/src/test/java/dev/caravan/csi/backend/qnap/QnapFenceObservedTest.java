package dev.caravan.csi.backend.qnap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.testing.NomadFake;
import dev.caravan.csi.testing.NomadFake.Instance;
import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.backend.VolumeRequest;
import dev.caravan.csi.backend.qnap.QnapSimulator.Flavour;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.observe.nomad.NomadPaths.NomadVolume;
import dev.caravan.csi.observe.inspect.Chain;
import dev.caravan.csi.observe.inspect.ChainInspector;
import dev.caravan.csi.observe.inspect.Finding;
import dev.caravan.csi.observe.metrics.MeteredControllerBackend;
import dev.caravan.csi.observe.metrics.PrometheusMetrics;
import dev.caravan.csi.observe.nomad.NomadClient;
import dev.caravan.csi.observe.stats.UsageCollector;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The qnap fence as the observability shows it, on the simulated appliance: the metrics count each
 * publish the fence refuses and the detach that lifts it, and the inspector compares the target's
 * ACL (the provider's attachment record) with Nomad's claims (the faithful fake on a unix socket).
 */
class QnapFenceObservedTest {
  private static final Map<String, String> ENV =
      Map.of(Credentials.ENV_USER, QnapSimulator.USER, Credentials.ENV_PASSWORD, QnapSimulator.PASSWORD);
  private static final String A = "iqn.2026-01.dev.caravan.test:node-a";
  private static final String B = "iqn.2026-01.dev.caravan.test:node-b";
  private static final String NOMAD_A = "fb2170a8-257d-3c64-b14d-bc06cc94e34c";
  private static final String NOMAD_B = "9230cd3b-3bda-9a3f-82f9-b2ea8dedb20e";
  private static final String ALLOC_B = "cd13d9b9-4f97-7184-c88b-7b451981616b";

  @TempDir Path dir;

  private static QnapBackend open(QnapSimulator sim) {
    return QnapBackend.open(new BackendConfig(B, Path.of("/nonexistent"),
        Map.of("url", sim.url().toString(), "portals", "192.0.2.10", "transport", "cgi"), NodeUsage.none()), ENV);
  }

  private static String create(QnapBackend b) {
    return b.controller().createVolume(new VolumeRequest("fenced", new CapacityRange(1L << 30, 0),
        Set.of(AccessType.MOUNT), Optional.of("ext4"), Map.of(), Optional.empty(), List.of(), List.of())).id();
  }

  private static double counter(PrometheusMetrics m, String name) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    m.write(out);
    Matcher x = Pattern.compile("(?m)^" + name + "\\{backend=\"qnap\"} (\\S+)$").matcher(out.toString(StandardCharsets.UTF_8));
    return x.find() ? Double.parseDouble(x.group(1)) : 0;
  }

  @Test
  void fencedPublishesAndTheDetachThatLiftsTheFenceAreCounted() throws IOException {
    try (QnapSimulator sim = QnapSimulator.start(Flavour.QTS); QnapBackend b = open(sim)) {
      PrometheusMetrics metrics = new PrometheusMetrics();
      ControllerBackend c = new MeteredControllerBackend(b.controller(), metrics, "qnap");
      String vol = create(b);
      c.publishVolume(vol, A, Map.of());
      c.publishVolume(vol, A, Map.of()); // Nomad's repeated publish for the same node is no refusal
      assertThat(counter(metrics, "caravan_fenced_publishes_total")).isZero();
      for (int i = 0; i < 2; i++) {
        assertThatThrownBy(() -> c.publishVolume(vol, B, Map.of())).isInstanceOf(CsiException.class)
            .extracting(e -> ((CsiException) e).kind()).isEqualTo(CsiException.Kind.FAILED_PRECONDITION);
      }
      assertThat(counter(metrics, "caravan_fenced_publishes_total")).isEqualTo(2);
      assertThat(counter(metrics, "caravan_forced_detaches_total")).isZero();

      c.unpublishVolume(vol, Optional.of(B)); // B holds nothing: removes nothing, lifts nothing
      assertThat(counter(metrics, "caravan_forced_detaches_total")).isZero();
      c.unpublishVolume(vol, Optional.of(A)); // the operator's detach of the lost node
      assertThat(counter(metrics, "caravan_forced_detaches_total")).isEqualTo(1);
      c.publishVolume(vol, B, Map.of());
      c.unpublishVolume(vol, Optional.of(B)); // an ordinary unpublish: B kept nobody out
      c.unpublishVolume(vol, Optional.of(A));
      assertThat(counter(metrics, "caravan_forced_detaches_total")).isEqualTo(1);
      assertThat(counter(metrics, "caravan_fenced_publishes_total")).isEqualTo(2);

      ByteArrayOutputStream out = new ByteArrayOutputStream();
      metrics.write(out);
      assertThat(out.toString(StandardCharsets.UTF_8))
          .contains("# TYPE caravan_fenced_publishes_total counter")
          .contains("# TYPE caravan_forced_detaches_total counter")
          .contains("caravan_backend_operations_total{backend=\"qnap\",op=\"publish\",outcome=\"failed_precondition\"} 2");
      b.controller().deleteVolume(vol);
    }
  }

  private static Finding finding(Chain c, String code) {
    return c.findings().stream().filter(x -> x.code().equals(code)).findFirst().orElseThrow(
        () -> new AssertionError("no finding " + code + " in " + c.findings()));
  }

  /**
   * On B, whose replacement allocation runs while the target still admits A, whose claim Nomad no
   * longer has: a stale attachment (with the detach of A's Nomad node) and a claim without an
   * attachment. Once A is unpublished and B published, the layers agree.
   */
  @Test
  void anAclHolderWithoutAClaimIsAStaleAttachment() throws IOException {
    try (QnapSimulator sim = QnapSimulator.start(Flavour.QTS); QnapBackend b = open(sim);
        NomadFake nomad = new NomadFake(dir.resolve("api.sock"), "t")) {
      String vol = create(b);
      b.controller().publishVolume(vol, A, Map.of());
      nomad.addVolume("default", "db", vol);
      nomad.putPlugin("caravan", true, List.of(new Instance(NOMAD_B, "", true)),
          List.of(new Instance(NOMAD_A, A, true), new Instance(NOMAD_B, B, true)));
      nomad.addAllocation("default", ALLOC_B, "web", "db", NOMAD_B, "client-b", "running", "run", "", "");
      nomad.claim("default", "db", ALLOC_B, true);
      NodeJournal journal = NodeJournal.open(dir.resolve("node"));
      ChainInspector inspector = new ChainInspector(B, b, journal,
          new UsageCollector(journal, UsageCollector.Settings.defaults(), Clock.systemUTC()), Clock.systemUTC(),
          Optional.of(new NomadClient(nomad.socket, () -> Optional.of("t"), Duration.ofSeconds(5))));

      Chain stuck = inspector.inspect(vol, Optional.of(new NomadVolume("default", "db")));
      assertThat(stuck.findings()).extracting(Finding::code).containsExactly("stale-attachment",
          "claim-without-attachment");
      assertThat(finding(stuck, "stale-attachment").message()).contains(A).contains(NOMAD_A);
      assertThat(finding(stuck, "stale-attachment").next())
          .isEqualTo("nomad volume detach -namespace default db " + NOMAD_A);
      assertThat(finding(stuck, "claim-without-attachment").message()).contains(ALLOC_B).contains(B);

      // A holder no plugin instance reports: the finding says how to find its node
      nomad.putPlugin("caravan", true, List.of(new Instance(NOMAD_B, "", true)),
          List.of(new Instance(NOMAD_B, B, true)));
      assertThat(finding(inspector.inspect(vol, Optional.of(new NomadVolume("default", "db"))), "stale-attachment")
          .next()).startsWith("nomad plugin status -verbose caravan").contains(A);

      b.controller().unpublishVolume(vol, Optional.of(A));
      b.controller().publishVolume(vol, B, Map.of());
      Chain agreed = inspector.inspect(vol, Optional.of(new NomadVolume("default", "db")));
      assertThat(agreed.findings()).isEmpty();
      assertThat(dev.caravan.csi.support.Json.write(agreed.toJson())).contains("\"provider_attachment\":[{\"csi_node_id\":\""
          + B + "\",\"nomad_node_id\":\"" + NOMAD_B + "\",\"claims_there\":[\"" + ALLOC_B + "\"]}]");
      b.controller().unpublishVolume(vol, Optional.empty());
      b.controller().deleteVolume(vol);
    }
  }
}
