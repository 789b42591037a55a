package dev.caravan.storage;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class HostCapabilitiesTest {
  private static String status(String uids, String capEff) {
    return "Name:\tjava\nUid:\t" + uids + "\nGid:\t0\t0\t0\t0\nCapInh:\t0000000000000000\nCapEff:\t" + capEff + "\n";
  }

  @Test
  void rootWithoutCapSysResourceCanMountButNotGrowMountedExt4() {
    // a container's root: every capability but CAP_SYS_RESOURCE (bit 24)
    HostCapabilities c = HostCapabilities.parse(status("0\t0\t0\t0", "000001fffeffffff"));
    assertThat(c.isRoot()).isTrue();
    assertThat(c.canMount()).isTrue();
    assertThat(c.canGrowMountedExt4()).isFalse();
  }

  @Test
  void theEffectiveUidCountsNotTheRealOne() {
    assertThat(HostCapabilities.parse(status("1000\t0\t0\t0", "0000000000000000")).isRoot()).isTrue();
    HostCapabilities user = HostCapabilities.parse(status("0\t1000\t1000\t1000", "0000000001000000"));
    assertThat(user.isRoot()).isFalse();
    assertThat(user.canMount()).isFalse();
    assertThat(user.canGrowMountedExt4()).isTrue();
  }

  @Test
  void aStatusWithoutUidIsRefused() {
    assertThatThrownBy(() -> HostCapabilities.parse("Name:\tx\n")).isInstanceOf(StorageException.class);
  }

  @Test
  void toolsAreFoundOnPathLikeToolRunnerDoes() {
    assertThat(HostCapabilities.current().tool("sh")).get().satisfies(p -> assertThat(p).isExecutable());
    assertThat(HostCapabilities.current().tool("caravan-no-such-tool")).isEmpty();
    assertThatThrownBy(() -> HostCapabilities.current().tool("/bin/sh")).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void thisProcessIsDescribed() {
    HostCapabilities c = HostCapabilities.current();
    assertThat(c.toString()).contains("euid=");
    if (c.isRoot()) {
      // root on the machines this runs on (CI, developers, the guest) holds CAP_SYS_ADMIN
      assertThat(c.canMount()).isTrue();
    }
  }
}
