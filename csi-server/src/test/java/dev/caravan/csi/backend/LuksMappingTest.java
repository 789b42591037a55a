package dev.caravan.csi.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.crypt.KeySlotCost;
import dev.caravan.storage.crypt.Luks2;
import dev.caravan.storage.testing.HostRequirements;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A volume's LUKS2 mapping as the backends see it on any host: where its device node is, that one
 * that was never opened is not open and has nothing to close or grow, and what the inspector is
 * shown of it, and a passphrase rotation's header steps (key slots need no device-mapper, only a
 * loop device). Opening, growing and closing one on a real dm-crypt run in the guest suites
 * ({@code LuksOnFileGuestTest}, {@code LuksOnQnapGuestTest}), and so does a rotating stage.
 */
class LuksMappingTest {
  private final VolumeRef volume = new VolumeRef("v1", Map.of(), Map.of(Encryption.SECRET, "mapping-test-Pw63"));
  private final LuksMapping mapping = new LuksMapping(volume, Luks2.mappingName("caravan-test:never-opened"));
  // The least work libcryptsetup accepts for a key slot: these tests are not about the cost.
  private static final KeySlotCost CHEAPEST = new KeySlotCost(Duration.ofMillis(1), 32, 1);

  @TempDir Path dir;

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

  /**
   * A rotation adds the new passphrase's key slot before it destroys the previous one's, so that a
   * crash between the two (here: the hook throws, as a kill would stop the stage there) leaves a
   * header both open, and the retry's {@link LuksMapping#finishRotationOn} destroys the previous one's
   * slot; afterwards only the new passphrase opens the header, and a repeat changes nothing.
   */
  @Test
  void aRotationAddsTheNewSlotBeforeDestroyingThePreviousAndARetryFinishesOneCutShort() throws IOException {
    HostRequirements.assumeRootWithLoopDevices();
    LoopDevice loop = LoopDevices.attach(image(), false);
    try (Passphrase previous = passphrase("rotation-previous-Kd82");
        Passphrase key = passphrase("rotation-current-Zt37")) {
      Path device = loop.device();
      mapping.formatOnceOn(device, previous, CHEAPEST);
      List<List<Integer>> slotsAtTheHook = new ArrayList<>();
      RuntimeException killed = new IllegalStateException("killed between the steps");
      assertThatThrownBy(() -> mapping.rotateOn(device, previous, key, CHEAPEST, () -> {
        slotsAtTheHook.add(Luks2.keySlots(device));
        throw killed;
      })).isSameAs(killed);
      assertThat(slotsAtTheHook).singleElement().asList().hasSize(2);
      assertThat(Luks2.slotOf(device, previous.bytes())).isPresent();
      assertThat(Luks2.slotOf(device, key.bytes())).isPresent();

      mapping.finishRotationOn(device, previous, key);
      assertThat(Luks2.keySlots(device)).hasSize(1);
      assertThat(Luks2.slotOf(device, previous.bytes())).isEmpty();
      assertThat(Luks2.slotOf(device, key.bytes())).isPresent();

      mapping.finishRotationOn(device, previous, key);
      assertThat(Luks2.keySlots(device)).hasSize(1);
      assertThat(Luks2.slotOf(device, key.bytes())).isPresent();
    } finally {
      LoopDevices.detach(loop);
    }
  }

  /** An uninterrupted rotation leaves one key slot, the new passphrase's. */
  @Test
  void aRotationLeavesOnlyTheNewPassphrasesSlot() throws IOException {
    HostRequirements.assumeRootWithLoopDevices();
    LoopDevice loop = LoopDevices.attach(image(), false);
    try (Passphrase previous = passphrase("rotation-previous-Kd82");
        Passphrase key = passphrase("rotation-current-Zt37")) {
      Path device = loop.device();
      mapping.formatOnceOn(device, previous, CHEAPEST);
      mapping.rotateOn(device, previous, key, CHEAPEST, () -> {});
      assertThat(Luks2.keySlots(device)).hasSize(1);
      assertThat(Luks2.slotOf(device, previous.bytes())).isEmpty();
      assertThat(Luks2.slotOf(device, key.bytes())).isPresent();
    } finally {
      LoopDevices.detach(loop);
    }
  }

  /**
   * A previous passphrase that opens no key slot either: UNAUTHENTICATED naming both secrets and
   * neither value, the hook never run, the header's key slots as they were.
   */
  @Test
  void aWrongPreviousPassphraseChangesNothingAndIsUnauthenticatedNamingBothSecrets() throws IOException {
    HostRequirements.assumeRootWithLoopDevices();
    LoopDevice loop = LoopDevices.attach(image(), false);
    try (Passphrase actual = passphrase("rotation-actual-Hv50");
        Passphrase wrongPrevious = passphrase("rotation-wrong-Bq19");
        Passphrase key = passphrase("rotation-current-Zt37")) {
      Path device = loop.device();
      mapping.formatOnceOn(device, actual, CHEAPEST);
      List<Integer> before = Luks2.keySlots(device);
      assertThatThrownBy(() -> mapping.rotateOn(device, wrongPrevious, key, CHEAPEST, () -> {
        throw new AssertionError("the hook between the steps ran for a wrong previous passphrase");
      })).isInstanceOfSatisfying(CsiException.class, e -> {
        assertThat(e.kind()).isEqualTo(CsiException.Kind.UNAUTHENTICATED);
        assertThat(e.getMessage()).contains("secrets." + Encryption.SECRET)
            .contains("secrets." + Encryption.PREVIOUS_SECRET).contains("v1")
            .doesNotContain("rotation-").doesNotContain("Zt37");
      });
      assertThat(Luks2.keySlots(device)).isEqualTo(before);
      assertThat(Luks2.slotOf(device, actual.bytes())).isPresent();
      assertThat(Luks2.slotOf(device, key.bytes())).isEmpty();
    } finally {
      LoopDevices.detach(loop);
    }
  }

  private Path image() throws IOException {
    Path image = dir.resolve("luks.img");
    try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
      f.setLength(32L << 20);
    }
    return image;
  }

  private static Passphrase passphrase(String value) {
    return Encryption.passphrase("test", Map.of(Encryption.SECRET, value));
  }
}
