package dev.caravan.csi.dhv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The Dynamic Host Volume plugin's parameters: encryption needs the plugin's passphrase file. */
class DhvParametersTest {
  @Test
  void encryptionOnWithoutAPassphraseFileIsRefusedNamingWhereOneComesFrom() {
    assertThatThrownBy(() -> DhvParameters.parse(Map.of("encryption", "on"), Set.of("encryption", "fsType")))
        .isInstanceOfSatisfying(DhvException.class, e -> {
          assertThat(e.exitStatus()).isEqualTo(DhvException.INVALID);
          assertThat(e.getMessage()).contains("encryption=on", "no secrets", "--passphrase-file");
        });
  }

  @Test
  void encryptionOnWithAPassphraseFileGoesToTheBackend() {
    DhvParameters p = DhvParameters.parse(Map.of("encryption", "on", "mode", "0700"), Set.of("encryption"), true);
    assertThat(p.encrypted()).isTrue();
    assertThat(p.backend()).containsExactly(Map.entry("encryption", "on"));
  }

  @Test
  void encryptionOffGoesToTheBackendThatKnowsIt() {
    DhvParameters p = DhvParameters.parse(Map.of("encryption", "off", "mode", "0750"), Set.of("encryption"));
    assertThat(p.encrypted()).isFalse();
    assertThat(p.backend()).containsExactly(Map.entry("encryption", "off"));
  }
}
