package dev.caravan.storage.internal.zfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.NativeLibraryUnavailableException;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ZfsModuleVersionTest {
  @Test
  void theUpstreamReleaseIsTheVersionBeforeThePackageRevision() {
    assertThat(ZfsModuleVersion.upstream("2.3.2-2~bpo12+2")).contains("2.3.2");
    assertThat(ZfsModuleVersion.upstream("2.3.2\n")).contains("2.3.2");
    assertThat(ZfsModuleVersion.upstream("2.2.99-365_g1a2b3c")).contains("2.2.99");
    assertThat(ZfsModuleVersion.upstream("garbage")).isEmpty();
    assertThat(ZfsModuleVersion.upstream("2.3")).isEmpty();
    assertThat(ZfsModuleVersion.upstream("")).isEmpty();
  }

  @Test
  void acceptsAVerifiedReleaseWhateverItsPackaging() {
    ZfsModuleVersion.requireVerified("2.3.2-2~bpo12+2");
    ZfsModuleVersion.requireVerified("2.2.7-1");
    ZfsModuleVersion.requireVerified("2.3.0");
  }

  @Test
  void refusesAnUnverifiedReleaseNamingBothSidesAndWhatToDo() {
    assertThatThrownBy(() -> ZfsModuleVersion.requireVerified("2.3.1-1"))
        .isInstanceOf(NativeLibraryUnavailableException.class)
        .hasMessageContaining("the loaded OpenZFS kernel module is 2.3.1")
        .hasMessageContaining("'2.3.1-1'")
        .hasMessageContaining("verified only for OpenZFS 2.2.0-2.2.11, 2.3.0, 2.3.2-2.3.9")
        .hasMessageContaining("native/zfs-cmd/print-layout --check");
    assertThatThrownBy(() -> ZfsModuleVersion.requireVerified("garbage"))
        .isInstanceOf(NativeLibraryUnavailableException.class)
        .hasMessageContaining("version cannot be read")
        .hasMessageContaining("'garbage'");
  }

  @Test
  void describesVersionsAsRangesOfPatchReleases() {
    assertThat(ZfsModuleVersion.describe(Set.of("2.3.2", "2.2.9", "2.2.10", "2.3.0", "2.3.3")))
        .isEqualTo("2.2.9-2.2.10, 2.3.0, 2.3.2-2.3.3");
  }
}
