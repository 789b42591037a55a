package dev.caravan.csi.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.crypt.Luks2;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * A volume's LUKS2 mapping as the backends see it on any host: where its device node is, that one
 * that was never opened is not open and has nothing to close or grow, and what the inspector is
 * shown of it. Opening, growing and closing one on a real dm-crypt run in the guest suites
 * ({@code LuksOnFileGuestTest}, {@code LuksOnQnapGuestTest}).
 */
class LuksMappingTest {
  private final VolumeRef volume = new VolumeRef("v1", Map.of(), Map.of(Encryption.SECRET, "mapping-test-Pw63"));
  private final LuksMapping mapping = new LuksMapping(volume, Luks2.mappingName("caravan-test:never-opened"));

  @Test
  void itsDeviceNodeIsUnderDevMapperByName() {
    assertThat(mapping.path()).isEqualTo(Path.of("/dev/mapper", mapping.name()));
    assertThat(mapping.isAt(Path.of("/dev/mapper", mapping.name()))).isTrue();
    assertThat(mapping.isAt(Path.of("/dev/mapper/caravan-other"))).isFalse();
    assertThat(LuksMapping.isMapperDevice(mapping.path())).isTrue();
    assertThat(LuksMapping.isMapperDevice(Path.of("/dev/loop3"))).isFalse();
  }

  @Test
  void oneNeverOpenedIsNotOpenAndHasNothingToCloseOrGrow() {
    assertThat(mapping.ifOpen()).isEmpty();
    assertThat(mapping.isOpenOn(device -> true)).isFalse();
    assertThat(mapping.closeIfOpen()).isFalse();
    assertThatCode(() -> mapping.growToItsDevice("NodeExpandVolume")).doesNotThrowAnyException();
  }

  @Test
  void theInspectorIsShownItsNameAndStateAndNeverThePassphrase() {
    Map<String, String> shown = mapping.evidence();
    assertThat(shown).containsEntry("luks2.mapping", mapping.path().toString()).containsEntry("luks2.open", "no")
        .doesNotContainKey("luks2.device");
    assertThat(shown.toString()).doesNotContain("mapping-test-Pw63");
  }

  @Test
  void aNodeWithoutDmCryptRefusesAnEncryptedVolumeNamingWhy() {
    Luks2.unavailableReason().ifPresentOrElse(why -> assertThatThrownBy(() -> LuksMapping.requireCryptFor(volume))
            .isInstanceOfSatisfying(CsiException.class, e -> {
              assertThat(e.kind()).isEqualTo(CsiException.Kind.FAILED_PRECONDITION);
              assertThat(e.getMessage()).contains("volume v1 is encrypted (LUKS2)").contains(why);
            }),
        () -> assertThatCode(() -> LuksMapping.requireCryptFor(volume)).doesNotThrowAnyException());
  }
}
