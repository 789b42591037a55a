package dev.caravan.csi.dhv;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The Dynamic Host Volume plugin's parameters: what it refuses about encryption. */
class DhvParametersTest {
  @Test
  void encryptionOnIsRefusedNamingWhyEvenWhenTheBackendEncrypts() {
    assertThatThrownBy(() -> DhvParameters.parse(Map.of("encryption", "on"), Set.of("encryption", "fsType")))
        .isInstanceOfSatisfying(DhvException.class, e -> {
          assertThat(e.exitStatus()).isEqualTo(DhvException.INVALID);
          assertThat(e.getMessage()).contains("encryption=on").contains("no secrets");
        });
  }

  @Test
  void encryptionOffGoesToTheBackendThatKnowsIt() {
    assertThat(DhvParameters.parse(Map.of("encryption", "off", "mode", "0750"), Set.of("encryption")).backend())
        .containsExactly(Map.entry("encryption", "off"));
  }
}
