package dev.caravan.csi.scenario;

import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.TopologyRequirement;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.testing.HostRequirements;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Nomad's node-side call sequences (docs/nomad-csi.md §5, §6.1, §12, §13) replayed exactly, with the
 * path layouts of Nomad 1.6.x (no namespace segment) and 1.8+ ({@code staging/<ns>/<vol>/<usage>}).
 */
class NomadSequenceTest {
  enum Layout {
    NOMAD_1_6,
    NOMAD_1_8
  }

  private static final String USAGE = "rw-file-system-single-node-writer";
  private static final VolumeCapability CAP = Caps.mount("ext4");
  private PluginFixture f;
  private String vol;

  @BeforeEach
  void start() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    f = PluginFixture.start();
    // `nomad volume create`: no capacity_range when both bounds are 0, accessibility_requirements always present
    vol = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("nomad-vol[0]").addVolumeCapabilities(CAP)
        .setAccessibilityRequirements(TopologyRequirement.getDefaultInstance()).build()).getVolume().getVolumeId();
  }

  @AfterEach
  void stop() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  private Path staging(Layout layout) {
    return layout == Layout.NOMAD_1_6
        ? f.root.resolve("staging/" + vol + "/" + USAGE)
        : f.root.resolve("staging/default/" + vol + "/" + USAGE);
  }

  private Path target(String alloc) {
    return f.root.resolve("per-alloc/" + alloc + "/" + vol + "/" + USAGE);
  }

  /** csi_hook.Prerun + csimanager MountVolume for one allocation. */
  private void allocStart(Layout layout, String alloc) throws IOException {
    Path staging = staging(layout);
    Files.createDirectories(staging, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
    if (!MountTable.isMountPoint(staging)) {
      f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(vol)
          .setStagingTargetPath(staging.toString()).setVolumeCapability(CAP).build());
    }
    Files.createDirectories(target(alloc).getParent());
    if (!MountTable.isMountPoint(target(alloc))) {
      f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(vol)
          .setStagingTargetPath(staging.toString()).setTargetPath(target(alloc).toString())
          .setVolumeCapability(CAP).build());
    }
  }

  /** csi_hook.Postrun: unpublish, Nomad removes the host target, then unstage if the tracker says "last user". */
  private void allocStop(Layout layout, String alloc, boolean lastUser) throws IOException {
    ignorable(() -> f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(vol)
        .setTargetPath(target(alloc).toString()).build()));
    Files.deleteIfExists(target(alloc));
    if (lastUser) {
      ignorable(() -> f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(vol)
          .setStagingTargetPath(staging(layout).toString()).build()));
    }
  }

  /** Nomad treats NotFound from unpublish/unstage as success. */
  private static void ignorable(Runnable call) {
    try {
      call.run();
    } catch (StatusRuntimeException e) {
      if (e.getStatus().getCode() != Code.NOT_FOUND) {
        throw e;
      }
    }
  }

  private void assertNothingLeft() {
    assertThat(f.ourMounts()).isEmpty();
    assertThat(f.ourLoops()).isEmpty();
  }

  @ParameterizedTest
  @EnumSource(Layout.class)
  void twoAllocationsShareOneStagedVolume(Layout layout) throws IOException {
    allocStart(layout, "alloc-a");
    allocStart(layout, "alloc-b"); // staging already a mount point: Nomad skips NodeStage
    Files.writeString(target("alloc-a").resolve("shared.txt"), "from a");
    assertThat(Files.readString(target("alloc-b").resolve("shared.txt"))).isEqualTo("from a");

    allocStop(layout, "alloc-a", false);
    assertThat(Files.readString(target("alloc-b").resolve("shared.txt"))).isEqualTo("from a");
    assertThat(MountTable.isMountPoint(staging(layout))).isTrue();

    allocStop(layout, "alloc-b", true);
    assertNothingLeft();
    // GC replays: unpublish and unstage again, both succeed
    allocStop(layout, "alloc-a", true);
    allocStop(layout, "alloc-b", true);
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(vol).build());
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(vol).build());
  }

  @ParameterizedTest
  @EnumSource(Layout.class)
  void pluginRestartBetweenAllocationsAndEarlyUnstage(Layout layout) throws IOException {
    allocStart(layout, "alloc-a");
    allocStart(layout, "alloc-b");
    Files.writeString(target("alloc-b").resolve("keep.txt"), "still here");

    f.restart(); // plugin process restarts inside its allocation: mounts stay, journal is reloaded

    assertThat(f.node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(vol)
        .setVolumePath(target("alloc-b").toString()).build()).getVolumeCondition().getAbnormal()).isFalse();
    // After a client restart Nomad's usage tracker is empty: the first stop also sends NodeUnstage (§6.1).
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(vol)
        .setTargetPath(target("alloc-a").toString()).build());
    var early = error(() -> f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging(layout).toString()).build()));
    assertThat(early.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(Files.readString(target("alloc-b").resolve("keep.txt"))).isEqualTo("still here");

    f.restart();
    allocStop(layout, "alloc-b", true);
    assertNothingLeft();
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(vol).build());
  }

  @ParameterizedTest
  @EnumSource(Layout.class)
  void failedStartIsFollowedByTeardown(Layout layout) throws IOException {
    // a publish that fails (bad capability) is followed by Nomad's postrun teardown of a target never published
    allocStart(layout, "alloc-a");
    Path bad = target("alloc-x");
    Files.createDirectories(bad.getParent());
    assertThat(GrpcOutcomes.code(() -> f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging(layout).toString()).setTargetPath(bad.toString())
        .setVolumeCapability(Caps.mount("ext4", VolumeCapability.AccessMode.Mode.MULTI_NODE_MULTI_WRITER)).build())))
        .isEqualTo(Code.INVALID_ARGUMENT);
    allocStop(layout, "alloc-x", false);
    allocStop(layout, "alloc-a", true);
    assertNothingLeft();
  }
}
