package dev.caravan.csi.backend.qnap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Encryption;
import dev.caravan.csi.backend.Passphrase;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.backend.VolumeRequest;
import dev.caravan.csi.backend.qnap.QnapSimulator.Call;
import dev.caravan.csi.backend.qnap.QnapSimulator.Flavour;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.support.Json;
import dev.caravan.csi.observe.inspect.Chain;
import dev.caravan.csi.observe.inspect.ChainInspector;
import dev.caravan.csi.observe.stats.UsageCollector;
import dev.caravan.storage.crypt.Luks2;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Opening the backend: the transport picked from the firmware, credentials from the environment. */
class QnapBackendTest {
  private static final Map<String, String> ENV =
      Map.of(Credentials.ENV_USER, QnapSimulator.USER, Credentials.ENV_PASSWORD, QnapSimulator.PASSWORD);

  private static BackendConfig config(QnapSimulator sim, String transport) {
    return new BackendConfig("iqn.1993-08.org.debian:01:a", Path.of("/nonexistent"),
        Map.of("url", sim.url().toString(), "portals", "192.0.2.10", "transport", transport), NodeUsage.none());
  }

  @Test
  void autoPicksRestOnHeroAndCgiOnQts() {
    try (QnapSimulator hero = QnapSimulator.start(Flavour.HERO); QnapBackend b = QnapBackend.open(config(hero, "auto"), ENV)) {
      assertThat(b.readiness().detail()).contains("rest API").contains("TS-873A");
      assertThat(b.controller().listVolumes()).isEmpty();
      assertThat(hero.calls()).extracting(Call::path).contains("/api/iscsi/v1/luns");
    }
    try (QnapSimulator qts = QnapSimulator.start(Flavour.QTS); QnapBackend b = QnapBackend.open(config(qts, "auto"), ENV)) {
      assertThat(b.readiness().ready()).isTrue();
      assertThat(b.readiness().detail()).contains("cgi API");
      assertThat(b.controller().listVolumes()).isEmpty();
      assertThat(qts.calls()).extracting(Call::path).noneMatch(p -> p.startsWith("/api/"));
    }
  }

  @Test
  void anExplicitTransportLogsInOnlyWhenFirstNeeded() {
    try (QnapSimulator sim = QnapSimulator.start(Flavour.QTS)) {
      QnapBackend b = QnapBackend.open(config(sim, "cgi"), ENV);
      assertThat(sim.logins()).isZero();
      assertThat(b.readiness().ready()).isTrue();
      assertThat(sim.logins()).isEqualTo(1);
      assertThat(sim.liveSessions()).isEqualTo(1);
      b.close();
      assertThat(sim.liveSessions()).isZero();
    }
  }

  /** The inspector's evidence names the node a volume is published to: the appliance's ACL of its target. */
  @Test
  void describeShowsWhoTheVolumeIsPublishedTo() {
    try (QnapSimulator sim = QnapSimulator.start(Flavour.QTS); QnapBackend b = QnapBackend.open(config(sim, "cgi"), ENV)) {
      String id = b.controller().createVolume(new VolumeRequest("held", new CapacityRange(1L << 30, 0),
          Set.of(AccessType.MOUNT), Optional.of("ext4"), Map.of(), Optional.empty(), List.of(), List.of())).id();
      assertThat(b.describe(id).properties()).containsEntry("publishedTo", "");
      b.controller().publishVolume(id, "iqn.2026-01.dev.caravan.test:node-a", Map.of());
      assertThat(b.describe(id).properties()).containsEntry("publishedTo", "iqn.2026-01.dev.caravan.test:node-a");
      b.controller().unpublishVolume(id, Optional.of("iqn.2026-01.dev.caravan.test:node-a"));
      assertThat(b.describe(id).properties()).containsEntry("publishedTo", "");
    }
  }

  /**
   * The inspector's evidence of an encrypted volume names its LUKS2 mapping (from the LUN's WWID) and
   * whether it is open here; a plain volume's has no mapping. Nothing of the passphrase is in it.
   */
  @Test
  void describeShowsAnEncryptedVolumesMappingAndNeverItsPassphrase() {
    String passphrase = "describe-passphrase-Qm41";
    try (QnapSimulator sim = QnapSimulator.start(Flavour.QTS); QnapBackend b = QnapBackend.open(config(sim, "cgi"), ENV);
        Passphrase key = Encryption.passphrase("CreateVolume", Map.of(Encryption.SECRET, passphrase))) {
      var encrypted = b.controller().createVolume(new VolumeRequest("sealed", new CapacityRange(1L << 30, 0),
          Set.of(AccessType.MOUNT), Optional.of("ext4"), Map.of(Encryption.PARAMETER, "on"), Optional.empty(),
          List.of(), List.of(), Optional.of(key)));
      String wwid = "3" + encrypted.context().get("naa");
      Map<String, String> shown = b.describe(encrypted.id()).properties();
      assertThat(shown).containsEntry("encrypted", "yes")
          .containsEntry("luks2.mapping", "/dev/mapper/" + Luks2.mappingName("caravan-qnap:" + wwid))
          .containsEntry("luks2.open", "no").doesNotContainKey("luks2.device");
      assertThat(shown.toString()).doesNotContain(passphrase);
      String plain = b.controller().createVolume(new VolumeRequest("plain", new CapacityRange(1L << 30, 0),
          Set.of(AccessType.MOUNT), Optional.of("ext4"), Map.of(), Optional.empty(), List.of(), List.of())).id();
      assertThat(b.describe(plain).properties()).containsEntry("encrypted", "no").doesNotContainKey("luks2.mapping");
    }
  }

  /**
   * The node plugin's config: portals, no appliance. It needs no account (an empty environment), is ready
   * without asking any appliance, and refuses controller calls naming why; appliance settings without
   * qnap.url are a mistake (a controller config that lost its url), refused at start.
   */
  @Test
  void withoutAUrlTheInstanceIsNodeOnlyHoldsNoAccountAndRefusesControllerCalls(@TempDir Path work) {
    BackendConfig node = new BackendConfig("iqn.1993-08.org.debian:01:a", Path.of("/nonexistent"),
        Map.of("portals", "192.0.2.10,192.0.2.11"), NodeUsage.none());
    try (QnapBackend b = QnapBackend.open(node, Map.of())) {
      assertThat(b.readiness().ready()).isTrue();
      assertThat(b.readiness().detail()).contains("node side only");
      assertThatThrownBy(() -> b.controller().createVolume(new VolumeRequest("x", new CapacityRange(1L << 30, 0),
          Set.of(AccessType.MOUNT), Optional.of("ext4"), Map.of(), Optional.empty(), List.of(), List.of())))
          .isInstanceOf(CsiException.class).hasMessageContaining("node side only").hasMessageContaining("qnap.url")
          .extracting(e -> ((CsiException) e).kind()).isEqualTo(CsiException.Kind.FAILED_PRECONDITION);
      assertThatThrownBy(() -> b.describe("qnap/v1/cvem-x-0123456789ab")).hasMessageContaining("node side only");
      // The inspector still shows this node's layers, and concludes nothing from a backend that cannot answer.
      NodeJournal journal = NodeJournal.open(work.resolve("node"));
      Chain chain = new ChainInspector("n", b, journal,
          new UsageCollector(journal, UsageCollector.Settings.defaults(), Clock.systemUTC()), Clock.systemUTC())
          .inspect("qnap/v1/cvem-x-0123456789ab");
      assertThat(chain.findings()).isEmpty();
      assertThat(Json.write(chain.toJson())).contains("\"unknown\"").contains("node side only");
    }
    BackendConfig lostUrl = new BackendConfig("n", Path.of("/nonexistent"),
        Map.of("portals", "192.0.2.10", "credentials-file", "/etc/caravan/qnap-credentials", "transport", "cgi"),
        NodeUsage.none());
    assertThatThrownBy(() -> QnapBackend.open(lostUrl, ENV)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("[qnap.credentials-file, qnap.transport]").hasMessageContaining("needs qnap.url");
  }

  @Test
  void probeIsNotReadyWhileTheApplianceIsAway() {
    QnapSimulator sim = QnapSimulator.start(Flavour.QTS);
    QnapBackend b = QnapBackend.open(config(sim, "cgi"), ENV);
    sim.close();
    assertThat(b.readiness().ready()).isFalse();
    assertThat(b.readiness().detail()).contains("did not answer");
    b.close();
    assertThatThrownBy(() -> QnapBackend.open(config(sim, "auto"), ENV)).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("qnap.transport=cgi or rest");
  }
}
