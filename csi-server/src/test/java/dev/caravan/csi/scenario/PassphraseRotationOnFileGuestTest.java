package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.RootLog;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeContentSource;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.testing.HostRequirements;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Rotating the passphrase of an encrypted {@code file} volume (LUKS2) through the CSI socket, on a
 * real dm-crypt (the guest): a stage whose secrets carry the new passphrase under {@code
 * encryptionPassphrase} and the old one under {@code encryptionPassphrasePrevious} leaves one key
 * slot, the new passphrase's; the old one is refused, the data is intact. A snapshot is a copy of the
 * image, header included: one taken before the change restores under the old passphrase, and a stage
 * of the restored volume with the same rotating secrets rotates it too. The {@code cryptsetup}
 * command is the referee; no passphrase reaches an answer, a log line or a file.
 */
class PassphraseRotationOnFileGuestTest {
  private static final String OLD = "rotation-on-file: first passphrase";
  private static final String NEW = "rotation-on-file: second passphrase";
  private static final String WRONG = "rotation-on-file: never a passphrase";
  private static final Pattern KEY_SLOT = Pattern.compile("(?m)^\\s+\\d+: luks2$");

  private PluginFixture f;
  private final VolumeCapability cap = Caps.mount("ext4");
  private RootLog log;

  @BeforeEach
  void start() throws IOException {
    HostRequirements.assumeTool("cryptsetup", "cryptsetup-bin");
    log = RootLog.capture();
    f = PluginFixture.start(TestBackend.fileEncrypted());
  }

  @AfterEach
  void stop() throws IOException {
    if (log != null) {
      log.close();
    }
    if (f != null) {
      f.close();
    }
  }

  private CreateVolumeRequest.Builder request(String name) {
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(64 * MIB)).putParameters("encryption", "on")
        .putSecrets("encryptionPassphrase", OLD);
  }

  private static Map<String, String> rotating(String to, String from) {
    return Map.of("encryptionPassphrase", to, "encryptionPassphrasePrevious", from);
  }

  private Path image(Volume v) {
    return f.work.resolve("data/volumes").resolve(v.getVolumeId() + ".img");
  }

  /** {@code cryptsetup open --test-passphrase}: whether {@code passphrase} opens a key slot of the image's header. */
  private static boolean opens(Path image, String passphrase) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("cryptsetup", "open", "--test-passphrase", "--type", "luks2", "--key-file=-",
        image.toString()).redirectErrorStream(true).start();
    try (OutputStream in = p.getOutputStream()) {
      in.write(passphrase.getBytes(StandardCharsets.UTF_8));
    }
    p.getInputStream().readAllBytes();
    assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
    return p.exitValue() == 0;
  }

  /** How many key slots {@code cryptsetup luksDump} lists. */
  private static long keySlots(Path image) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("cryptsetup", "luksDump", image.toString()).redirectErrorStream(true).start();
    p.getOutputStream().close();
    String dump = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(p.exitValue()).as(dump).isZero();
    return KEY_SLOT.matcher(dump).results().count();
  }

  @Test
  void aStageWithThePreviousPassphraseLeavesOnlyTheNewOnesKeySlot() throws Exception {
    Volume v = f.controller.createVolume(request("rot").build()).getVolume();
    Path staging = f.dir("staging/rot");
    f.stage(v, staging, cap, Map.of("encryptionPassphrase", OLD));
    Files.writeString(staging.resolve("data.txt"), "written under the first passphrase");
    f.unstage(v.getVolumeId(), staging);
    String before = f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setName("rot-before")
        .setSourceVolumeId(v.getVolumeId()).build()).getSnapshot().getSnapshotId();
    assertThat(keySlots(image(v))).isEqualTo(1);

    // neither passphrase opens it: refused naming both keys, the header untouched, nothing mounted
    StatusRuntimeException neither = error(() -> f.stage(v, staging, cap, rotating(NEW, WRONG)));
    assertThat(neither.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED);
    assertThat(neither.getStatus().getDescription()).contains("secrets.encryptionPassphrase ")
        .contains("secrets.encryptionPassphrasePrevious").doesNotContain(NEW).doesNotContain(WRONG);
    assertThat(MountTable.isMountPoint(staging)).isFalse();
    assertThat(keySlots(image(v))).isEqualTo(1);
    assertThat(opens(image(v), OLD)).isTrue();

    // the rotating stage: staged, the data intact, one key slot and it is the new passphrase's
    f.stage(v, staging, cap, rotating(NEW, OLD));
    assertThat(Files.readString(staging.resolve("data.txt"))).isEqualTo("written under the first passphrase");
    f.unstage(v.getVolumeId(), staging);
    assertThat(keySlots(image(v))).isEqualTo(1);
    assertThat(opens(image(v), NEW)).as("cryptsetup, the new passphrase").isTrue();
    assertThat(opens(image(v), OLD)).as("cryptsetup, the old passphrase").isFalse();

    // the old passphrase alone is refused; the new one alone, or the same rotating secrets again, open it
    StatusRuntimeException old = error(() -> f.stage(v, staging, cap, Map.of("encryptionPassphrase", OLD)));
    assertThat(old.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED);
    assertThat(old.getStatus().getDescription()).contains("secrets.encryptionPassphrase").doesNotContain(OLD);
    assertThat(MountTable.isMountPoint(staging)).isFalse();
    f.stage(v, staging, cap, rotating(NEW, OLD));
    assertThat(Files.readString(staging.resolve("data.txt"))).isEqualTo("written under the first passphrase");
    f.unstage(v.getVolumeId(), staging);
    f.stage(v, staging, cap, Map.of("encryptionPassphrase", NEW));
    assertThat(Files.readString(staging.resolve("data.txt"))).isEqualTo("written under the first passphrase");
    f.unstage(v.getVolumeId(), staging);
    assertThat(keySlots(image(v))).isEqualTo(1);

    // the snapshot taken before keeps the old passphrase's header; its restore is rotated by the same secrets
    Volume restored = f.controller.createVolume(request("rot-restore").setVolumeContentSource(VolumeContentSource
        .newBuilder().setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(before)))
        .build()).getVolume();
    assertThat(opens(image(restored), OLD)).isTrue();
    Path restoredStaging = f.dir("staging/rot-restore");
    f.stage(restored, restoredStaging, cap, rotating(NEW, OLD));
    assertThat(Files.readString(restoredStaging.resolve("data.txt"))).isEqualTo("written under the first passphrase");
    f.unstage(restored.getVolumeId(), restoredStaging);
    assertThat(opens(image(restored), NEW)).isTrue();
    assertThat(opens(image(restored), OLD)).isFalse();

    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(restored.getVolumeId()).build());
    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(before).build());
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());

    String logged = log.text();
    assertThat(logged).contains("its passphrase is now secrets.encryptionPassphrase")
        .doesNotContain(OLD).doesNotContain(NEW).doesNotContain(WRONG);
    for (String secret : new String[] {OLD, NEW, WRONG}) {
      assertThat(EncryptionParameterOnFileTest.filesContaining(f.work, secret)).isEmpty();
    }
  }
}
