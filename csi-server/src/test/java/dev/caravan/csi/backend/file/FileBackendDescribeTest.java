package dev.caravan.csi.backend.file;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.Encryption;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.backend.Passphrase;
import dev.caravan.csi.backend.VolumeRequest;
import dev.caravan.storage.crypt.Luks2;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What the claim-chain inspector is shown of a file volume: an encrypted one's LUKS2 mapping (named from
 * its image's path) and whether it is open, and never its passphrase; a plain one has no mapping. The
 * mapping open over the loop device, and the device the inspector then compares, are proved in the guest
 * ({@code LuksOnFileGuestTest}).
 */
class FileBackendDescribeTest {
  private static final String PASSPHRASE = "describe-passphrase-Fz93";

  @Test
  void anEncryptedVolumesEvidenceNamesItsMappingAndNotItsPassphrase(@TempDir Path dir) {
    FileBackend b = FileBackend.open(new BackendConfig("n1", dir, Map.of(), NodeUsage.none()));
    String sealed;
    try (Passphrase key = Encryption.passphrase("CreateVolume", Map.of(Encryption.SECRET, PASSPHRASE))) {
      sealed = b.controller().createVolume(request("sealed", Map.of(Encryption.PARAMETER, "on"), Optional.of(key))).id();
    }
    String plain = b.controller().createVolume(request("plain", Map.of(), Optional.empty())).id();

    Map<String, String> shown = b.describe(sealed).properties();
    Path image = dir.resolve("volumes").resolve(sealed + ".img").toAbsolutePath();
    assertThat(shown).containsEntry("encrypted", "yes")
        .containsEntry("luks2.mapping", "/dev/mapper/" + Luks2.mappingName("caravan-file:" + image))
        .containsEntry("luks2.open", "no").doesNotContainKey("luks2.device");
    Luks2.unavailableReason().ifPresentOrElse(
        why -> assertThat(shown).as("a host without dm-crypt says why").containsEntry("luks2.unavailable", why),
        () -> assertThat(shown).doesNotContainKey("luks2.unavailable"));
    assertThat(shown.toString()).doesNotContain(PASSPHRASE);
    assertThat(b.describe(sealed).attachedDevice()).as("nothing attached, so no device").isEmpty();

    assertThat(b.describe(plain).properties()).containsEntry("encrypted", "no").doesNotContainKey("luks2.mapping");
  }

  private static VolumeRequest request(String name, Map<String, String> parameters, Optional<Passphrase> key) {
    return new VolumeRequest(name, new CapacityRange(16L << 20, 0), Set.of(AccessType.MOUNT), Optional.of("ext4"),
        parameters, Optional.empty(), List.of(), List.of(), key);
  }
}
