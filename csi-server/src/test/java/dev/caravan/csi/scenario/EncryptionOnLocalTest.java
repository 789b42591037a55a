package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.scenario.TestBackend.Zfs;
import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.testing.RootLog;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
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
 * ZFS native encryption on the {@code local} backend through the CSI socket, against real OpenZFS in
 * the guest (skipped elsewhere, naming why): an encrypted zvol is made with its key unloaded, staged
 * with the passphrase from the stage's secrets (a wrong or missing one refused, nothing mounted),
 * unstaged with its key unloaded again, snapshotted and cloned still encrypted under the same
 * passphrase, and the passphrase is in no answer, no log line and no file the plugin wrote. The
 * {@code zfs} command is the oracle.
 */
class EncryptionOnLocalTest {
  private static final String PASSPHRASE = "enc-on-local: 7 blue tigers";
  private static final String WRONG = "enc-on-local: 3 red herrings";
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

  private CreateVolumeRequest.Builder create(String name) {
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(CAP)
        .setCapacityRange(Caps.bytes(64 * MIB)).putParameters("encryption", "on").putParameters("sparse", "true")
        .putSecrets("encryptionPassphrase", PASSPHRASE);
  }

  private NodeStageVolumeRequest stageRequest(Volume v, Path staging, Map<String, String> secrets) {
    return NodeStageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).putAllVolumeContext(v.getVolumeContextMap())
        .setStagingTargetPath(staging.toString()).setVolumeCapability(CAP).putAllSecrets(secrets).build();
  }

  private Path stageAndPublish(Volume v, String name) throws IOException {
    Path staging = f.dir("staging/" + name);
    Path target = f.dir("per-alloc/" + name).resolve("rw");
    f.node.nodeStageVolume(stageRequest(v, staging, Map.of("encryptionPassphrase", PASSPHRASE)));
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).setVolumeCapability(CAP).build());
    return target;
  }

  private void unpublishAndUnstage(Volume v, String name) throws IOException {
    Path staging = f.dir("staging/" + name);
    Path target = f.dir("per-alloc/" + name).resolve("rw");
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setTargetPath(target.toString()).build());
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setStagingTargetPath(staging.toString()).build());
  }

  private static String dataset(Volume v) {
    return v.getVolumeContextMap().get("dataset");
  }

  @Test
  void anEncryptedVolumeLivesThroughStagesSnapshotsAndClonesAndItsPassphraseIsNowhere() throws IOException {
    Volume v = f.controller.createVolume(create("enc").build()).getVolume();
    String dataset = dataset(v);
    assertThat(v.getVolumeContextMap()).containsEntry("encryption", "on");
    assertThat(Zfs.get("encryption", dataset)).isEqualTo("aes-256-gcm");
    assertThat(Zfs.get("pbkdf2iters", dataset)).as("the plugin's --zfs-pbkdf2-iters")
        .isEqualTo(Long.toString(TestBackend.KEY_COSTS.zfs().count()));
    assertThat(Zfs.get("keyformat", dataset)).isEqualTo("passphrase");
    assertThat(Zfs.get("keylocation", dataset)).isEqualTo("prompt");
    assertThat(Zfs.get("keystatus", dataset)).as("no key loaded until a stage").isEqualTo("unavailable");
    assertThat(f.controller.createVolume(create("enc").build()).getVolume().getVolumeId())
        .as("a repeated create").isEqualTo(v.getVolumeId());
    assertThat(GrpcOutcomes.code(() -> f.controller.createVolume(create("enc").putParameters("encryption", "off")
        .build()))).as("the same name without encryption").isEqualTo(Code.ALREADY_EXISTS);

    assertThat(f.plugin().backend().describe(v.getVolumeId()).properties())
        .as("what caravan inspect shows").containsEntry("encrypted", "yes").containsEntry("zfs.keystatus", "unavailable");

    // stage, write, unstage: the key is loaded while staged only
    Path target = stageAndPublish(v, "enc");
    assertThat(Zfs.get("keystatus", dataset)).isEqualTo("available");
    assertThat(f.plugin().backend().describe(v.getVolumeId()).properties()).containsEntry("zfs.keystatus", "available");
    Files.writeString(target.resolve("secret.txt"), "kept encrypted at rest");
    unpublishAndUnstage(v, "enc");
    assertThat(Zfs.get("keystatus", dataset)).as("unloaded at unstage").isEqualTo("unavailable");
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setStagingTargetPath(f.dir("staging/enc").toString()).build()); // a repeat: nothing to unload

    // a wrong or missing passphrase: refused naming the secret, nothing loaded, formatted or mounted
    Path staging = f.dir("staging/enc");
    StatusRuntimeException wrong = GrpcOutcomes.error(() ->
        f.node.nodeStageVolume(stageRequest(v, staging, Map.of("encryptionPassphrase", WRONG))));
    assertThat(wrong.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED);
    assertThat(wrong.getStatus().getDescription()).contains("secrets.encryptionPassphrase").doesNotContain(WRONG);
    StatusRuntimeException missing = GrpcOutcomes.error(() -> f.node.nodeStageVolume(stageRequest(v, staging, Map.of())));
    assertThat(missing.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED);
    assertThat(missing.getStatus().getDescription()).contains("secrets.encryptionPassphrase");
    assertThat(MountTable.isMountPoint(staging)).isFalse();
    assertThat(Zfs.get("keystatus", dataset)).isEqualTo("unavailable");

    // the right one reads the data back
    target = stageAndPublish(v, "enc");
    assertThat(Files.readString(target.resolve("secret.txt"))).isEqualTo("kept encrypted at rest");
    unpublishAndUnstage(v, "enc");

    // an encrypted volume grows only while its key is loaded
    assertThat(GrpcOutcomes.code(() -> f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).setCapacityRange(Caps.bytes(128 * MIB)).build())))
        .isEqualTo(Code.FAILED_PRECONDITION);

    // snapshots and clones stay encrypted, under the same passphrase
    String snapshot = f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setName("enc-snap")
        .setSourceVolumeId(v.getVolumeId()).build()).getSnapshot().getSnapshotId();
    VolumeContentSource fromSnapshot = VolumeContentSource.newBuilder()
        .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snapshot)).build();
    assertThat(GrpcOutcomes.code(() -> f.controller.createVolume(create("enc-plain-clone")
        .putParameters("encryption", "off").setVolumeContentSource(fromSnapshot).build())))
        .as("a clone of an encrypted snapshot without encryption").isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(GrpcOutcomes.code(() -> f.controller.createVolume(create("enc-wrong-clone")
        .putSecrets("encryptionPassphrase", WRONG).setVolumeContentSource(fromSnapshot).build())))
        .as("a clone with another passphrase").isEqualTo(Code.UNAUTHENTICATED);
    Volume clone = f.controller.createVolume(create("enc-clone").setCapacityRange(Caps.bytes(96 * MIB))
        .setVolumeContentSource(fromSnapshot).build()).getVolume();
    Volume copy = f.controller.createVolume(create("enc-copy").setVolumeContentSource(VolumeContentSource.newBuilder()
        .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(v.getVolumeId()))).build()).getVolume();
    for (Volume c : new Volume[] {clone, copy}) {
      assertThat(Zfs.get("encryption", dataset(c))).isEqualTo("aes-256-gcm");
      assertThat(Zfs.get("encryptionroot", dataset(c))).as("its own encryption root").isEqualTo(dataset(c));
      assertThat(Zfs.get("keystatus", dataset(c))).isEqualTo("unavailable");
    }
    assertThat(clone.getCapacityBytes()).isEqualTo(96 * MIB);
    Path cloneTarget = stageAndPublish(clone, "enc-clone");
    assertThat(Files.readString(cloneTarget.resolve("secret.txt"))).isEqualTo("kept encrypted at rest");
    unpublishAndUnstage(clone, "enc-clone");
    assertThat(Zfs.get("keystatus", dataset(clone))).isEqualTo("unavailable");
    assertThat(Zfs.get("keystatus", dataset)).as("the source's key was never loaded by it").isEqualTo("unavailable");

    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snapshot).build());
    for (Volume d : new Volume[] {clone, copy, v}) {
      f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(d.getVolumeId()).build());
    }
    assertThat(f.storageObjects()).isEmpty();

    // nowhere: not in the plugin's log, its data directory or its journal
    String logged = log.text();
    assertThat(logged).contains("CreateVolume").doesNotContain(PASSPHRASE).doesNotContain(WRONG);
    assertThat(EncryptionParameterOnFileTest.filesContaining(f.work, PASSPHRASE)).isEmpty();
    assertThat(EncryptionParameterOnFileTest.filesContaining(f.work, WRONG)).isEmpty();
  }
}
