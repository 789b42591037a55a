package dev.caravan.csi.backend.qnap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.backend.VolumeRequest;
import dev.caravan.csi.backend.qnap.QnapSimulator.Call;
import dev.caravan.csi.backend.qnap.QnapSimulator.Flavour;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

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
