package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.scenario.TestBackend.Zfs;
import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.testing.RootLog;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeContentSource;
import dev.caravan.storage.mount.MountTable;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Rotating the passphrase of an encrypted {@code local} volume through the CSI socket, against real
 * OpenZFS in the guest (skipped elsewhere, naming why): a stage whose secrets carry the new
 * passphrase under {@code encryptionPassphrase} and the old one under {@code
 * encryptionPassphrasePrevious} changes the zvol's passphrase; afterwards the old one is refused,
 * the data is intact, a snapshot taken before the change restores under the new one, and a copy
 * made before it keeps the old one. No passphrase reaches an answer, a log line or a file.
 */
class PassphraseRotationOnLocalTest {
  private static final String OLD = "rotation-on-local: first passphrase";
  private static final String NEW = "rotation-on-local: second passphrase";
  private static final String WRONG = "rotation-on-local: never a passphrase";
  private static final VolumeCapability CAP = Caps.mount("ext4");

  private PluginFixture f;
  private RootLog log;

  @BeforeEach
  void start() throws IOException {
    log = RootLog.capture();
    f = PluginFixture.start(TestBackend.local());
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

  private CreateVolumeRequest.Builder create(String name, String passphrase) {
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(CAP)
        .setCapacityRange(Caps.bytes(64 * MIB)).putParameters("encryption", "on").putParameters("sparse", "true")
        .putSecrets("encryptionPassphrase", passphrase);
  }

  private NodeStageVolumeRequest stageRequest(Volume v, String name, Map<String, String> secrets) throws IOException {
    return NodeStageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).putAllVolumeContext(v.getVolumeContextMap())
        .setStagingTargetPath(f.dir("staging/" + name).toString()).setVolumeCapability(CAP).putAllSecrets(secrets)
        .build();
  }

  private Path stageAndPublish(Volume v, String name, Map<String, String> secrets) throws IOException {
    Path target = f.dir("per-alloc/" + name).resolve("rw");
    f.node.nodeStageVolume(stageRequest(v, name, secrets));
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setStagingTargetPath(f.dir("staging/" + name).toString()).setTargetPath(target.toString())
        .setVolumeCapability(CAP).build());
    return target;
  }

  private void unpublishAndUnstage(Volume v, String name) throws IOException {
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setTargetPath(f.dir("per-alloc/" + name).resolve("rw").toString()).build());
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setStagingTargetPath(f.dir("staging/" + name).toString()).build());
  }

  private static String dataset(Volume v) {
    return v.getVolumeContextMap().get("dataset");
  }

  private static Map<String, String> rotating(String to, String from) {
    return Map.of("encryptionPassphrase", to, "encryptionPassphrasePrevious", from);
  }

  @Test
  void aStageWithThePreviousPassphraseSetsTheNewOneOnTheZvolAndItsSnapshots() throws IOException {
    Volume v = f.controller.createVolume(create("rot", OLD).build()).getVolume();
    String dataset = dataset(v);
    Path target = stageAndPublish(v, "rot", Map.of("encryptionPassphrase", OLD));
    Files.writeString(target.resolve("data.txt"), "written under the first passphrase");
    unpublishAndUnstage(v, "rot");
    String before = f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setName("rot-before")
        .setSourceVolumeId(v.getVolumeId()).build()).getSnapshot().getSnapshotId();
    Volume copy = f.controller.createVolume(create("rot-copy", OLD).setVolumeContentSource(VolumeContentSource
        .newBuilder().setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(v.getVolumeId())))
        .build()).getVolume();
    String salt = Zfs.get("pbkdf2salt", dataset);

    // neither passphrase opens it: refused naming both keys, nothing loaded or mounted
    Path staging = f.dir("staging/rot");
    StatusRuntimeException neither = GrpcOutcomes.error(() ->
        f.node.nodeStageVolume(stageRequest(v, "rot", rotating(NEW, WRONG))));
    assertThat(neither.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED);
    assertThat(neither.getStatus().getDescription()).contains("secrets.encryptionPassphrase ")
        .contains("secrets.encryptionPassphrasePrevious").doesNotContain(NEW).doesNotContain(WRONG);
    assertThat(Zfs.get("keystatus", dataset)).isEqualTo("unavailable");
    assertThat(Zfs.get("pbkdf2salt", dataset)).as("nothing changed").isEqualTo(salt);
    assertThat(MountTable.isMountPoint(staging)).isFalse();

    // the rotating stage: staged, the data intact, the zvol under the new passphrase
    target = stageAndPublish(v, "rot", rotating(NEW, OLD));
    assertThat(Files.readString(target.resolve("data.txt"))).isEqualTo("written under the first passphrase");
    assertThat(Zfs.get("keystatus", dataset)).isEqualTo("available");
    assertThat(Zfs.get("pbkdf2salt", dataset)).as("a new wrapping key").isNotEqualTo(salt);
    assertThat(Zfs.get("pbkdf2iters", dataset)).as("the volume's cost kept")
        .isEqualTo(Long.toString(TestBackend.KEY_COSTS.zfs().count()));
    unpublishAndUnstage(v, "rot");
    assertThat(Zfs.get("keystatus", dataset)).isEqualTo("unavailable");

    // the old passphrase alone is refused; the new one alone opens it; the same rotating secrets again change nothing
    StatusRuntimeException old = GrpcOutcomes.error(() ->
        f.node.nodeStageVolume(stageRequest(v, "rot", Map.of("encryptionPassphrase", OLD))));
    assertThat(old.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED);
    assertThat(old.getStatus().getDescription()).contains("secrets.encryptionPassphrase").doesNotContain(OLD);
    assertThat(MountTable.isMountPoint(staging)).isFalse();
    String rotatedSalt = Zfs.get("pbkdf2salt", dataset);
    target = stageAndPublish(v, "rot", rotating(NEW, OLD));
    assertThat(Files.readString(target.resolve("data.txt"))).isEqualTo("written under the first passphrase");
    assertThat(Zfs.get("pbkdf2salt", dataset)).as("opened by the new one: nothing to change").isEqualTo(rotatedSalt);
    unpublishAndUnstage(v, "rot");
    target = stageAndPublish(v, "rot", Map.of("encryptionPassphrase", NEW));
    assertThat(Files.readString(target.resolve("data.txt"))).isEqualTo("written under the first passphrase");
    unpublishAndUnstage(v, "rot");

    // the snapshot taken before the change restores under the new passphrase, not the old one
    VolumeContentSource fromBefore = VolumeContentSource.newBuilder()
        .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(before)).build();
    assertThat(GrpcOutcomes.code(() -> f.controller.createVolume(create("rot-restore-old", OLD)
        .setVolumeContentSource(fromBefore).build()))).as("a restore with the old passphrase")
        .isEqualTo(Code.UNAUTHENTICATED);
    Volume restored = f.controller.createVolume(create("rot-restore", NEW).setVolumeContentSource(fromBefore).build())
        .getVolume();
    Path restoredTarget = stageAndPublish(restored, "rot-restore", Map.of("encryptionPassphrase", NEW));
    assertThat(Files.readString(restoredTarget.resolve("data.txt"))).isEqualTo("written under the first passphrase");
    unpublishAndUnstage(restored, "rot-restore");

    // a copy made before the change is its own encryption root: it keeps the old passphrase
    Path copyTarget = stageAndPublish(copy, "rot-copy", Map.of("encryptionPassphrase", OLD));
    assertThat(Files.readString(copyTarget.resolve("data.txt"))).isEqualTo("written under the first passphrase");
    unpublishAndUnstage(copy, "rot-copy");

    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(before).build());
    for (Volume d : new Volume[] {restored, copy, v}) {
      f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(d.getVolumeId()).build());
    }
    assertThat(f.storageObjects()).isEmpty();

    String logged = log.text();
    assertThat(logged).contains("its passphrase is now secrets.encryptionPassphrase")
        .doesNotContain(OLD).doesNotContain(NEW).doesNotContain(WRONG);
    for (String secret : new String[] {OLD, NEW, WRONG}) {
      assertThat(EncryptionParameterOnFileTest.filesContaining(f.work, secret)).isEmpty();
    }
  }
}
