package dev.caravan.storage.iscsi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class IscsiIfacesTest {
  @TempDir Path ifaces;

  /** A record as iscsiadm 2.1.8 writes it after {@code -o new} and one {@code -o update}. */
  @Test
  void readsTheValuesOfARecordAsIscsiadmWritesIt() throws IOException {
    Files.writeString(ifaces.resolve("caravan-b"), """
        # BEGIN RECORD 2.1.8
        iface.iscsi_ifacename = caravan-b
        iface.prefix_len = 0
        iface.transport_name = tcp
        iface.initiatorname = iqn.2026-01.dev.caravan.test:node-b
        iface.vlan_id = 0
        iface.hwaddress = <empty>
        # END RECORD
        """);

    assertThat(IscsiIfaces.value(ifaces, "caravan-b", IscsiIfaces.INITIATOR_NAME))
        .contains("iqn.2026-01.dev.caravan.test:node-b");
    assertThat(IscsiIfaces.value(ifaces, "caravan-b", IscsiIfaces.TRANSPORT)).contains("tcp");
    assertThat(IscsiIfaces.value(ifaces, "caravan-b", "iface.hwaddress")).as("<empty> is unset").isEmpty();
    assertThat(IscsiIfaces.value(ifaces, "caravan-b", "iface.ipaddress")).isEmpty();
    assertThat(IscsiIfaces.value(ifaces, "absent", IscsiIfaces.INITIATOR_NAME)).isEmpty();
    assertThat(IscsiIfaces.record(ifaces, "absent")).isEqualTo(Optional.empty());
  }

  @Test
  void aLaterLineWins() throws IOException {
    Files.writeString(ifaces.resolve("x"), """
        iface.initiatorname = iqn.2026-01.a:old
        #iface.initiatorname = iqn.2026-01.a:commented
        iface.initiatorname = iqn.2026-01.a:new
        """);

    assertThat(IscsiIfaces.value(ifaces, "x", IscsiIfaces.INITIATOR_NAME)).contains("iqn.2026-01.a:new");
  }

  @Test
  void namesAreFileNamesOfTheDatabase() {
    for (String good : List.of("default", "caravan-b", "eth1.100", "iface0", "be2iscsi.00:11:22:33:44:55")) {
      assertThat(IscsiIfaces.requireName(good)).isEqualTo(good);
    }
    for (String bad : List.of("", "..", "../etc", "a/b", "-I", "a b", "x".repeat(65))) {
      assertThatThrownBy(() -> IscsiIfaces.requireName(bad)).as(bad)
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("iSCSI interface");
    }
  }

  @Test
  void theBuiltInInterfacesCannotBeRedefinedAndNamesAreChecked() {
    Iscsi iscsi = Iscsi.system();
    assertThatThrownBy(() -> iscsi.defineIface("default", "iqn.2026-01.dev.caravan.test:x"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("built-in");
    assertThatThrownBy(() -> iscsi.defineIface("caravan-b", "not an iqn"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is not an iSCSI name");
    assertThat(Iscsi.system().iface()).as("system() is limited to no interface").isEmpty();
    assertThat(iscsi.through("default").iface()).contains("default");
    assertThat(iscsi.through("caravan-b").iface()).contains("caravan-b");
    assertThatThrownBy(() -> iscsi.through("../x")).isInstanceOf(IllegalArgumentException.class);
  }
}
