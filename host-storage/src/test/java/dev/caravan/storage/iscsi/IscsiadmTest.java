package dev.caravan.storage.iscsi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.iscsi.IscsiLoginException.Reason;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class IscsiadmTest {
  private final Iscsiadm iscsiadm = new Iscsiadm("iscsiadm", Duration.ofSeconds(5));
  private final Portal portal = Portal.parse("192.0.2.10");

  @Test
  void commandLinesNameTheTargetAndPortalOnly() {
    String iqn = "iqn.2004-04.com.qnap:ts-873a:iscsi.vol1.abc";
    assertThat(iscsiadm.login(iqn, portal))
        .containsExactly("iscsiadm", "-m", "node", "-T", iqn, "-p", "192.0.2.10:3260", "--login");
    assertThat(iscsiadm.logout(7)).containsExactly("iscsiadm", "-m", "session", "-r", "7", "--logout");
    assertThat(iscsiadm.discover(portal))
        .containsExactly(
            "iscsiadm", "-m", "discovery", "-t", "sendtargets", "-p", "192.0.2.10:3260", "-o", "nonpersistent");
    assertThat(iscsiadm.newNode(iqn, portal))
        .containsExactly("iscsiadm", "-m", "node", "-o", "new", "-T", iqn, "-p", "192.0.2.10:3260");
    assertThat(iscsiadm.deleteNode(iqn, portal))
        .containsExactly("iscsiadm", "-m", "node", "-o", "delete", "-T", iqn, "-p", "192.0.2.10:3260");
  }

  @Test
  void anInterfaceIsNamedBeforeTheActionAndOnlyWhenGiven() {
    String iqn = "iqn.2004-04.com.qnap:ts-873a:iscsi.vol1.abc";
    assertThat(Iscsiadm.through(iscsiadm.login(iqn, portal), Optional.of("caravan-b")))
        .containsExactly(
            "iscsiadm", "-m", "node", "-T", iqn, "-p", "192.0.2.10:3260", "-I", "caravan-b", "--login");
    assertThat(Iscsiadm.through(iscsiadm.newNode(iqn, portal), Optional.of("caravan-b")))
        .containsExactly(
            "iscsiadm", "-m", "node", "-o", "new", "-T", iqn, "-p", "192.0.2.10:3260", "-I", "caravan-b");
    assertThat(Iscsiadm.through(iscsiadm.discover(portal), Optional.of("caravan-b")))
        .containsExactly("iscsiadm", "-m", "discovery", "-t", "sendtargets", "-p", "192.0.2.10:3260", "-o",
            "nonpersistent", "-I", "caravan-b");
    assertThat(Iscsiadm.through(iscsiadm.deleteNode(iqn, portal), Optional.empty()))
        .isEqualTo(iscsiadm.deleteNode(iqn, portal));
  }

  @Test
  void interfaceRecordsAreMadeAndSetByName() {
    assertThat(iscsiadm.newIface("caravan-b"))
        .containsExactly("iscsiadm", "-m", "iface", "-I", "caravan-b", "-o", "new");
    assertThat(iscsiadm.updateIface("caravan-b", "iface.initiatorname", "iqn.2026-01.dev.caravan:b"))
        .containsExactly("iscsiadm", "-m", "iface", "-I", "caravan-b", "-o", "update", "-n",
            "iface.initiatorname", "-v", "iqn.2026-01.dev.caravan:b");
    assertThat(iscsiadm.deleteIface("caravan-b"))
        .containsExactly("iscsiadm", "-m", "iface", "-I", "caravan-b", "-o", "delete");
  }

  @Test
  void exitCodesBecomeReasons() {
    assertThat(Iscsiadm.reason(24)).isEqualTo(Reason.AUTHENTICATION_FAILED);
    assertThat(Iscsiadm.reason(19)).isEqualTo(Reason.REFUSED);
    assertThat(Iscsiadm.reason(8)).isEqualTo(Reason.UNREACHABLE);
    assertThat(Iscsiadm.reason(4)).isEqualTo(Reason.UNREACHABLE);
    assertThat(Iscsiadm.reason(20)).isEqualTo(Reason.ISCSID_UNAVAILABLE);
    assertThat(Iscsiadm.reason(1)).isEqualTo(Reason.OTHER);
  }

  @Test
  void parsesSendTargetsOutput() {
    String output =
        """
        127.0.0.1:3260,1 iqn.2003-01.dev.caravan.test:vol1
        127.0.0.2:3260,1 iqn.2003-01.dev.caravan.test:vol1
        [2001:db8::1]:3260,2 iqn.2003-01.dev.caravan.test:vol2
        nas.example.com:3260,1 iqn.2003-01.dev.caravan.test:vol3
        """;

    assertThat(Iscsiadm.parseDiscovery(output))
        .containsExactly(
            new DiscoveredTarget("iqn.2003-01.dev.caravan.test:vol1", Portal.parse("127.0.0.1"), 1),
            new DiscoveredTarget("iqn.2003-01.dev.caravan.test:vol1", Portal.parse("127.0.0.2"), 1),
            new DiscoveredTarget("iqn.2003-01.dev.caravan.test:vol2", Portal.parse("[2001:db8::1]"), 2));
    assertThat(Iscsiadm.parseDiscovery("")).isEmpty();
  }

  @Test
  void targetsMustBeIscsiNames() {
    Iscsi.requireName("iqn.2004-04.com.qnap:ts-873a:iscsi.vol1.abc");
    Iscsi.requireName("eui.0123456789ABCDEF");
    Iscsi.requireName("naa.60014055f1d2c3b4a5968778695a4b3c");
    for (String bad : List.of("iqn.2004-04.com.qnap:../../etc", "vol1", "iqn.2004-04.com.qnap:a b", "iqn.x", "")) {
      assertThatThrownBy(() -> Iscsi.requireName(bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("is not an iSCSI name");
    }
  }
}
