package dev.caravan.csi.backend.qnap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.iscsi.IscsiSession;
import dev.caravan.storage.iscsi.Portal;
import java.util.Map;
import org.junit.jupiter.api.Test;

class QnapSessionsTest {
  private static final String LUN = "cve-db-3f2a9c0b1d4e";
  private static final String IQN = "iqn.2004-04.com.qnap:ts-873a:iscsi." + LUN + ".1a2b3c";
  private static final QnapSessions SESSIONS =
      QnapSessions.of(Map.of("url", "https://nas.example:443", "portals", "192.0.2.10,localhost:3261,[2001:db8::5]"));

  private static IscsiSession session(String target, String portal) {
    return new IscsiSession(3, target, Portal.parse(portal), 1, "default");
  }

  @Test
  void aSessionToAConfiguredPortalAndACaravanTargetIsInScope() {
    assertThat(SESSIONS.inScope(session(IQN, "192.0.2.10:3260"))).isTrue();
    assertThat(SESSIONS.inScope(session(IQN, "127.0.0.1:3261"))).as("a portal given by name").isTrue();
    assertThat(SESSIONS.inScope(session(IQN, "[2001:0db8:0:0:0:0:0:5]:3260"))).as("IPv6, any spelling").isTrue();
  }

  @Test
  void anyOtherPortalOrPortIsOutside() {
    assertThat(SESSIONS.inScope(session(IQN, "192.0.2.11:3260"))).isFalse();
    assertThat(SESSIONS.inScope(session(IQN, "192.0.2.10:3261"))).isFalse();
    assertThat(SESSIONS.inScope(session(IQN, "127.0.0.1:3260"))).isFalse();
  }

  @Test
  void aTargetNotNamedAfterACaravanVolumeIsOutsideEvenOnTheAppliance() {
    // Another driver's LUN on the same appliance, a name that only looks close, the node's root disk.
    assertThat(SESSIONS.inScope(session("iqn.2004-04.com.qnap:ts-873a:iscsi.pvc-1234.1a2b3c", "192.0.2.10"))).isFalse();
    assertThat(SESSIONS.inScope(session("iqn.2004-04.com.qnap:ts-873a:iscsi.cve-db-3f2a9c.1a2b3c", "192.0.2.10")))
        .isFalse();
    assertThat(SESSIONS.inScope(session("iqn.2003-01.org.example:boot-" + LUN, "192.0.2.10"))).isFalse();
  }

  @Test
  void theVolumeIsReadFromTheTargetName() {
    assertThat(SESSIONS.volumeId(session(IQN, "192.0.2.10"))).contains("qnap/v1/" + LUN);
    assertThat(QnapSessions.lunName("iqn.2004-04.com.qnap:ts-873a:iscsi.cvx-logs-a-0123456789ab.1a2b3c"))
        .contains("cvx-logs-a-0123456789ab");
    assertThat(QnapSessions.lunName("iqn.2004-04.com.qnap:ts-873a:iscsi.other.1a2b3c")).isEmpty();
  }

  @Test
  void aJournalRecordUsesItsTargetByContextOrById() {
    IscsiSession s = session(IQN, "192.0.2.10");
    assertThat(SESSIONS.uses(s, "qnap/v1/cve-other-0123456789ab", Map.of("targetIqn", IQN))).isTrue();
    assertThat(SESSIONS.uses(s, "qnap/v1/" + LUN, Map.of())).isTrue();
    assertThat(SESSIONS.uses(s, "qnap/v1/cve-other-0123456789ab", Map.of("targetIqn", IQN + "x"))).isFalse();
  }

  @Test
  void theSettingsAreCheckedAsTheBackendChecksThem() {
    assertThatThrownBy(() -> QnapSessions.of(Map.of("url", "https://nas.example")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("qnap.portals");
  }
}
