package dev.caravan.csi.backend.qnap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.BackendObject;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.backend.VolumeRequest;
import dev.caravan.csi.backend.qnap.QnapSimulator.Flavour;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.observe.inspect.ChainInspector;
import dev.caravan.csi.observe.stats.UsageCollector;
import java.nio.file.Path;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The fence depends on the target's Default Policy (ACL row 0): QNAP's factory default admits every
 * initiator the ACL does not list, which would make refusing a second node's publish advisory. The
 * simulator starts from that factory default and decides logins as the manual says ({@link
 * QnapSimulator#admits}); Caravan must deny by default on every target it makes and refuse a publish
 * it cannot prove fenced.
 */
class QnapDefaultPolicyTest {
  private static final Map<String, String> ENV =
      Map.of(Credentials.ENV_USER, QnapSimulator.USER, Credentials.ENV_PASSWORD, QnapSimulator.PASSWORD);
  private static final String A = "iqn.2026-01.dev.caravan.test:node-a";
  private static final String B = "iqn.2026-01.dev.caravan.test:node-b";
  private static final String STRANGER = "iqn.1991-05.com.microsoft:some-host-on-the-san";

  @TempDir Path dir;

  private static QnapBackend open(QnapSimulator sim, Flavour flavour) {
    return QnapBackend.open(new BackendConfig(B, Path.of("/nonexistent"), Map.of("url", sim.url().toString(),
        "portals", "192.0.2.10", "transport", flavour == Flavour.HERO ? "rest" : "cgi"), NodeUsage.none()), ENV);
  }

  private static String create(QnapBackend b, String name) {
    return b.controller().createVolume(new VolumeRequest(name, new CapacityRange(1L << 30, 0),
        Set.of(AccessType.MOUNT), Optional.of("ext4"), Map.of(), Optional.empty(), List.of(), List.of())).id();
  }

  private static String target(String volumeId) {
    return volumeId.substring(QnapIds.PREFIX.length());
  }

  @ParameterizedTest
  @EnumSource(Flavour.class)
  void everyTargetCaravanMakesDeniesInitiatorsItsAclDoesNotList(Flavour flavour) {
    try (QnapSimulator sim = QnapSimulator.start(flavour); QnapBackend b = open(sim, flavour)) {
      sim.createForeignTarget("made-in-the-ui");
      assertThat(sim.admits("made-in-the-ui", STRANGER)).as("the factory default admits everyone").isTrue();

      String vol = create(b, "fenced");
      String t = target(vol);
      assertThat(sim.admits(t, STRANGER)).as("a host Caravan never published to").isFalse();
      assertThat(sim.admits(t, A)).isFalse();
      b.controller().publishVolume(vol, A, Map.of());
      assertThat(sim.admits(t, A)).isTrue();
      assertThat(sim.admits(t, B)).isFalse();
      assertThatThrownBy(() -> b.controller().publishVolume(vol, B, Map.of())).isInstanceOf(CsiException.class);
      // nomad volume detach of A's lost node: A is cut off on the appliance, not only in Caravan's books
      b.controller().unpublishVolume(vol, Optional.of(A));
      assertThat(sim.admits(t, A)).isFalse();
      b.controller().publishVolume(vol, B, Map.of());
      assertThat(sim.admits(t, B)).isTrue();
      assertThat(sim.admits(t, A)).isFalse();
      assertThat(b.openFences()).isEmpty();
      assertThat(sim.violations()).isEmpty();
    }
  }

  @Test
  void aPublishIsRefusedWhileTheDefaultPolicyAdmitsUnlistedInitiators() {
    try (QnapSimulator sim = QnapSimulator.start(Flavour.QTS); QnapBackend b = open(sim, Flavour.QTS)) {
      String vol = create(b, "opened");
      String t = target(vol);
      for (int access : List.of(QnapSimulator.READ_WRITE, QnapSimulator.READ_ONLY)) {
        sim.setDefaultAccess(t, access); // an operator opens it in the appliance's UI
        assertThatThrownBy(() -> b.controller().publishVolume(vol, A, Map.of())).isInstanceOfSatisfying(
            CsiException.class, e -> {
              assertThat(e.kind()).isEqualTo(CsiException.Kind.FAILED_PRECONDITION);
              assertThat(e.getMessage()).contains("Default Policy").contains("'" + t + "'")
                  .contains("Deny Access").contains("caravan doctor");
            });
        assertThat(sim.acl(t)).as("nothing admitted").isEmpty();
        assertThat(b.openFences()).singleElement().asString().contains(t);
        BackendObject o = b.describe(vol);
        assertThat(o.properties().get(BackendObject.FENCE_OPEN)).contains("Default Policy").contains(t);
      }

      sim.setDefaultAccess(t, QnapSimulator.DENY);
      b.controller().publishVolume(vol, A, Map.of());
      assertThat(b.describe(vol).properties()).doesNotContainKey(BackendObject.FENCE_OPEN);
      // Opened again while published: the next publish (Nomad repeats them) says so, and inspect shows it.
      sim.setDefaultAccess(t, QnapSimulator.READ_WRITE);
      assertThatThrownBy(() -> b.controller().publishVolume(vol, A, Map.of())).hasMessageContaining("Default Policy");
      NodeJournal journal = NodeJournal.open(dir.resolve("node"));
      ChainInspector inspector = new ChainInspector(B, b, journal,
          new UsageCollector(journal, UsageCollector.Settings.defaults(), Clock.systemUTC()), Clock.systemUTC(),
          Optional.empty());
      assertThat(inspector.inspect(vol, Optional.empty()).findings()).filteredOn(f -> f.code().equals("fence-open"))
          .singleElement().satisfies(f -> {
            assertThat(f.severity()).isEqualTo("error");
            assertThat(f.message()).contains(t).contains("Default Policy");
          });
    }
  }

  @Test
  void anAnswerThatDoesNotShowTheDefaultPolicyFailsClosed() {
    try (QnapSimulator sim = QnapSimulator.start(Flavour.QTS); QnapBackend b = open(sim, Flavour.QTS)) {
      sim.defaultPolicyHidden = true;
      String vol = create(b, "unproven");
      assertThatThrownBy(() -> b.controller().publishVolume(vol, A, Map.of())).isInstanceOfSatisfying(
          CsiException.class, e -> {
            assertThat(e.kind()).isEqualTo(CsiException.Kind.FAILED_PRECONDITION);
            assertThat(e.getMessage()).contains("does not show").contains("accessMode");
          });
      assertThat(sim.acl(target(vol))).isEmpty();
    }
  }

  /** A CreateVolume cut short after the target was made (still admitting everyone) is finished by its retry. */
  @Test
  void aCreateVolumeRetryDeniesWhatAnInterruptedOneLeftOpen() {
    try (QnapSimulator sim = QnapSimulator.start(Flavour.QTS); QnapBackend b = open(sim, Flavour.QTS)) {
      String vol = create(b, "retried");
      sim.setDefaultAccess(target(vol), QnapSimulator.READ_WRITE);
      assertThat(create(b, "retried")).isEqualTo(vol);
      assertThat(sim.admits(target(vol), STRANGER)).isFalse();
      b.controller().publishVolume(vol, A, Map.of());
    }
  }
}
