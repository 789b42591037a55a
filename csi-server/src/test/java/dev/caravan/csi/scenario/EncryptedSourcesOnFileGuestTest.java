package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeContentSource;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Snapshots and clones of encrypted file volumes through the CSI socket, on a real dm-crypt (the
 * guest). A copy holds its source's blocks as they are, LUKS2 header included: it is encrypted exactly
 * when its source is, under the source's passphrase. So CreateVolume from a source whose encryption
 * differs from the request's is INVALID_ARGUMENT (the spec's row for a source incompatible with the
 * parameters) and makes nothing, and a restore that asks for what its source is opens with the
 * source's passphrase and holds its data.
 */
class EncryptedSourcesOnFileGuestTest {
  private static final String PASSPHRASE = "copies-passphrase-Hq27";
  private static final String SECRET = "encryptionPassphrase";
  private static final long SIZE = 64 * MIB;

  private PluginFixture f;
  private final VolumeCapability cap = Caps.mount("ext4");
  private List<Path> volumeFiles;

  @BeforeEach
  void start() throws IOException {
    f = PluginFixture.start(TestBackend.fileEncrypted());
  }

  @AfterEach
  void stop() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  private CreateVolumeRequest.Builder request(String name, boolean encrypted) {
    CreateVolumeRequest.Builder b = CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(SIZE));
    return encrypted ? b.putParameters("encryption", "on").putSecrets(SECRET, PASSPHRASE) : b;
  }

  private static VolumeContentSource fromSnapshot(String id) {
    return VolumeContentSource.newBuilder()
        .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(id)).build();
  }

  private static VolumeContentSource fromVolume(String id) {
    return VolumeContentSource.newBuilder()
        .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(id)).build();
  }

  private String snapshot(Volume v, String name) {
    return f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(v.getVolumeId())
        .setName(name).build()).getSnapshot().getSnapshotId();
  }

  /**
   * CreateVolume is refused as the spec says, naming the source and the parameter, and makes nothing:
   * no volume listed, no file (image, partial copy or record) beside those there before.
   */
  private void refused(CreateVolumeRequest request, String sourceId, String why) {
    StatusRuntimeException e = error(() -> f.controller.createVolume(request));
    assertThat(e.getStatus().getCode()).as(request.getName()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(e.getStatus().getDescription()).contains(sourceId, "parameters.encryption", why)
        .doesNotContain(PASSPHRASE);
    assertThat(f.controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesCount())
        .as("volumes after refusing %s", request.getName()).isEqualTo(2);
    assertThat(files("data/volumes")).as("volume files after refusing %s", request.getName())
        .isEqualTo(volumeFiles);
  }

  private List<Path> files(String dir) {
    try (Stream<Path> files = Files.list(f.work.resolve(dir))) {
      return files.sorted().toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void stage(Volume v, Path staging) {
    f.stage(v, staging, cap, Map.of(SECRET, PASSPHRASE));
  }

  @Test
  void aCopyIsEncryptedExactlyWhenItsSourceIsAndOpensWithTheSourcesPassphrase() throws IOException {
    Volume secret = f.controller.createVolume(request("secret", true).build()).getVolume();
    Volume plain = f.controller.createVolume(request("plain", false).build()).getVolume();
    Path staging = f.dir("staging/secret");
    stage(secret, staging);
    byte[] data = "written before the snapshot".getBytes(StandardCharsets.UTF_8);
    Files.write(staging.resolve("kept.txt"), data);
    f.unstage(secret.getVolumeId(), staging);
    String secretSnap = snapshot(secret, "secret-snap");
    String plainSnap = snapshot(plain, "plain-snap");
    volumeFiles = files("data/volumes");

    refused(request("restore-off", false).setVolumeContentSource(fromSnapshot(secretSnap)).build(), secretSnap,
        "is encrypted");
    refused(request("clone-off", false).setVolumeContentSource(fromVolume(secret.getVolumeId())).build(),
        secret.getVolumeId(), "is encrypted");
    refused(request("restore-on", true).setVolumeContentSource(fromSnapshot(plainSnap)).build(), plainSnap,
        "is not encrypted");
    refused(request("clone-on", true).setVolumeContentSource(fromVolume(plain.getVolumeId())).build(),
        plain.getVolumeId(), "is not encrypted");

    Volume restored = f.controller.createVolume(request("restored", true)
        .setVolumeContentSource(fromSnapshot(secretSnap)).build()).getVolume();
    assertThat(restored.getVolumeContextMap()).containsEntry("encryption", "on");
    Path again = f.dir("staging/restored");
    stage(restored, again);
    assertThat(Files.readAllBytes(again.resolve("kept.txt"))).isEqualTo(data);
    f.unstage(restored.getVolumeId(), again);

    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(restored.getVolumeId()).build());
    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(secretSnap).build());
    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(plainSnap).build());
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(secret.getVolumeId()).build());
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(plain.getVolumeId()).build());
    assertThat(EncryptionParameterOnFileTest.filesContaining(f.work, PASSPHRASE)).isEmpty();
  }

  /**
   * A staged encrypted volume's filesystem lives on its LUKS2 mapping, not on the loop device: a
   * snapshot and a clone taken while it is mounted freeze that filesystem, as for a plain volume, so
   * neither needs reflinks (the guest's data directory has none) and both hold what was written before.
   */
  @Test
  void aStagedEncryptedVolumeIsCopiedFrozenThroughItsMapping() throws IOException {
    Volume secret = f.controller.createVolume(request("staged-secret", true).build()).getVolume();
    Path staging = f.dir("staging/staged-secret");
    stage(secret, staging);
    byte[] data = "written while staged".getBytes(StandardCharsets.UTF_8);
    Files.write(staging.resolve("kept.txt"), data);
    String snap = snapshot(secret, "staged-snap");
    Volume clone = f.controller.createVolume(request("staged-clone", true)
        .setVolumeContentSource(fromVolume(secret.getVolumeId())).build()).getVolume();
    f.unstage(secret.getVolumeId(), staging);

    Volume restored = f.controller.createVolume(request("staged-restored", true)
        .setVolumeContentSource(fromSnapshot(snap)).build()).getVolume();
    for (Volume copy : List.of(restored, clone)) {
      Path at = f.dir("staging/" + copy.getVolumeId().replaceAll("[^A-Za-z0-9-]", "_"));
      stage(copy, at);
      assertThat(Files.readAllBytes(at.resolve("kept.txt"))).as(copy.getVolumeId()).isEqualTo(data);
      f.unstage(copy.getVolumeId(), at);
      f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(copy.getVolumeId()).build());
    }
    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snap).build());
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(secret.getVolumeId()).build());
  }
}
