package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.code;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.Topology;
import dev.caravan.csi.v1.TopologyRequirement;
import dev.caravan.csi.v1.Volume;
import dev.caravan.storage.testing.HostRequirements;
import io.grpc.Status.Code;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeCapability.AccessMode.Mode;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.file.SparseFiles;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What only the file backend promises: its layout under the data directory (an image and a record
 * per volume and snapshot), sizes to the MiB or exact, and how it reports a lost image. The
 * behaviour every backend shares is in {@link ControllerConformance} and {@link NodeConformance}.
 */
class FileBackendOnFileTest {
  private PluginFixture f;

  @BeforeEach
  void start() throws IOException {
    f = PluginFixture.start(TestBackend.file());
  }

  @AfterEach
  void stop() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  private CreateVolumeRequest.Builder create(String name, long bytes) {
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(Caps.mount("ext4"))
        .setCapacityRange(Caps.bytes(bytes));
  }

  @Test
  void aVolumeIsAnImageAndARecordAndSoIsASnapshot() throws IOException {
    Volume v = f.controller.createVolume(create("db", 100 * MIB).build()).getVolume();
    String id = v.getVolumeId();
    assertThat(id).matches("vol-db-[0-9a-f]{12}");
    assertThat(f.storageObjects()).containsExactly("volumes/" + id + ".img", "volumes/" + id + ".meta");
    assertThat(Files.size(f.data.resolve("volumes/" + id + ".img"))).isEqualTo(100 * MIB);
    String snap = f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(id).setName("s").build())
        .getSnapshot().getSnapshotId();
    assertThat(snap).matches("snap-s-[0-9a-f]{12}");
    assertThat(f.storageObjects()).containsExactly("snapshots/" + snap + ".img", "snapshots/" + snap + ".meta",
        "volumes/" + id + ".img", "volumes/" + id + ".meta");
    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snap).build());
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(f.storageObjects()).isEmpty();
  }

  @Test
  void sizesRoundUpToTheMibOrAreExact() {
    assertThat(f.controller.createVolume(create("round", 100 * MIB + 1).build()).getVolume().getCapacityBytes())
        .isEqualTo(101 * MIB);
    assertThat(f.controller.createVolume(create("exact", 0).setCapacityRange(Caps.range(20 * MIB + 4096, 20 * MIB + 4096))
        .build()).getVolume().getCapacityBytes()).isEqualTo(20 * MIB + 4096);
  }

  @Test
  void aVolumeOnlyAnotherNodeMayHoldHasNoRoomHere() throws IOException {
    assertThat(code(() -> f.controller.createVolume(create("elsewhere", 20 * MIB).setAccessibilityRequirements(
        TopologyRequirement.newBuilder().addRequisite(Topology.newBuilder().putSegments("caravan.csi/node", "other"))).build())))
        .isEqualTo(Code.RESOURCE_EXHAUSTED);
    assertThat(f.storageObjects()).isEmpty();
  }

  @Test
  void aLostImageMakesTheVolumeAbnormal() throws IOException {
    Volume v = f.controller.createVolume(create("health", 20 * MIB).build()).getVolume();
    Files.delete(f.data.resolve("volumes/" + v.getVolumeId() + ".img"));
    var broken = f.controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    assertThat(broken.getStatus().getVolumeCondition().getAbnormal()).isTrue();
    assertThat(broken.getStatus().getVolumeCondition().getMessage()).contains("missing");
  }

  /**
   * The loop device a stage recorded is detached behind the plugin's back and another image is
   * attached at the same number (what a reboot or {@code losetup -D} and a later attach do): a repeated
   * stage must not answer for that device but attach the volume anew, and the publish must bind a
   * device over this volume's image.
   */
  @Test
  void aRepeatedBlockStageDoesNotTrustALoopNumberNowBackingAnotherImage() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    VolumeCapability cap = Caps.block();
    String id = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("mine").addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(20 * MIB)).build()).getVolume().getVolumeId();
    Path image = f.data.resolve("volumes/" + id + ".img");
    mark(image, "THIS VOLUME");
    Path staging = f.dir("staging/default/mine/rw-block-device-single-node-writer");
    Path target = f.dir("per-alloc/a1/mine").resolve("rw-block-device-single-node-writer");
    NodeStageVolumeRequest stage = NodeStageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(cap).build();
    f.node.nodeStageVolume(stage);
    LoopDevice recorded = LoopDevices.find(image).orElseThrow();

    Path other = f.work.resolve("someone-elses.img");
    SparseFiles.create(other, 20 * MIB);
    mark(other, "ANOTHER VOLUME");
    LoopDevices.detach(recorded);
    ToolRunner.run(List.of("losetup", recorded.device().toString(), other.toString()), Duration.ofSeconds(30));
    try {
      assertThat(LoopDevices.backs(recorded.device(), other)).as("the number now backs the other image").isTrue();
      NodePublishVolumeRequest publish = NodePublishVolumeRequest.newBuilder().setVolumeId(id)
          .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).setVolumeCapability(cap).build();
      assertThat(code(() -> f.node.nodePublishVolume(publish))).as("publish before the stage is repeated")
          .isEqualTo(Code.FAILED_PRECONDITION);
      assertThat(target).doesNotExist();
      f.node.nodeStageVolume(stage);
      f.node.nodePublishVolume(publish);
      assertThat(read(target, "THIS VOLUME".length())).as("what the workload's device holds").isEqualTo("THIS VOLUME");
      assertThat(read(other, "ANOTHER VOLUME".length())).isEqualTo("ANOTHER VOLUME");
    } finally {
      f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
          .setTargetPath(target.toString()).build());
      f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
          .setStagingTargetPath(staging.toString()).build());
      LoopDevices.find(other).ifPresent(LoopDevices::detach);
    }
    assertThat(LoopDevices.find(image)).as("unstage detached this volume's device").isEmpty();
  }

  /**
   * A read-only stage writes nothing to the device: an empty volume is refused, not formatted; a
   * filesystem whose journal still holds committed transactions (the image copied while another
   * volume had it mounted: what a crash leaves) is mounted without replaying them. The image's bytes
   * are compared before and after.
   */
  @ParameterizedTest
  @ValueSource(strings = {"ext4", "xfs"})
  void aReadOnlyStageNeverWritesToTheDevice(String fs) throws IOException {
    HostRequirements.assumeLoopAndExt4();
    if (fs.equals("xfs")) {
      HostRequirements.assumeLoopAndExt4();
      HostRequirements.assumeXfs();
    }
    long bytes = fs.equals("xfs") ? 320 * MIB : 32 * MIB;
    VolumeCapability rw = Caps.mount(fs);
    VolumeCapability ro = Caps.mount(fs, Mode.SINGLE_NODE_READER_ONLY);
    String empty = volume("empty-" + fs, rw, bytes);
    Path emptyImage = f.data.resolve("volumes/" + empty + ".img");
    String before = digest(emptyImage);
    Path roStaging = f.dir("staging/default/empty-" + fs + "/ro-file-system-single-node-reader-only");
    var refused = GrpcOutcomes.error(() -> f.stage(empty, roStaging, ro));
    assertThat(refused.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(refused.getStatus().getDescription()).contains("not formatted");
    assertThat(digest(emptyImage)).as("the empty device after a read-only stage").isEqualTo(before);
    assertThat(MountTable.isMountPoint(roStaging)).isFalse();

    String source = volume("live-" + fs, rw, bytes);
    String copy = volume("crashed-" + fs, rw, bytes);
    Path sourceStaging = f.dir("staging/default/live-" + fs + "/rw-file-system-single-node-writer");
    f.stage(source, sourceStaging, rw);
    Path copyImage = f.data.resolve("volumes/" + copy + ".img");
    try {
      Path file = sourceStaging.resolve("committed.txt");
      Files.writeString(file, "in the journal");
      try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
        ch.force(true); // committed to the journal, not yet written back in place
      }
      Files.copy(f.data.resolve("volumes/" + source + ".img"), copyImage, StandardCopyOption.REPLACE_EXISTING);
    } finally {
      f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(source)
          .setStagingTargetPath(sourceStaging.toString()).build());
    }
    String dirty = digest(copyImage);
    Path copyStaging = f.dir("staging/default/crashed-" + fs + "/ro-file-system-single-node-reader-only");
    f.stage(copy, copyStaging, ro);
    assertThat(MountTable.at(copyStaging)).get().satisfies(m -> assertThat(m.readOnly()).isTrue());
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(copy)
        .setStagingTargetPath(copyStaging.toString()).build());
    assertThat(digest(copyImage)).as("the device with a dirty journal after a read-only stage").isEqualTo(dirty);
  }

  private String volume(String name, VolumeCapability cap, long bytes) {
    return f.controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(bytes)).build()).getVolume().getVolumeId();
  }

  private static String digest(Path file) throws IOException {
    try {
      java.security.MessageDigest sha = java.security.MessageDigest.getInstance("SHA-256");
      try (var in = Files.newInputStream(file)) {
        byte[] buffer = new byte[1 << 20];
        for (int n; (n = in.read(buffer)) > 0; ) {
          sha.update(buffer, 0, n);
        }
      }
      return java.util.HexFormat.of().formatHex(sha.digest());
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void mark(Path file, String text) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
      ch.write(ByteBuffer.wrap(text.getBytes(StandardCharsets.US_ASCII)), 0);
    }
  }

  private static String read(Path file, int length) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      ByteBuffer b = ByteBuffer.allocate(length);
      ch.read(b, 0);
      return new String(b.array(), StandardCharsets.US_ASCII);
    }
  }
}
