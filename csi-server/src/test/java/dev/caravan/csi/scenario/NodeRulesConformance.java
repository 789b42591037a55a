package dev.caravan.csi.scenario;

import static dev.caravan.csi.testing.GrpcOutcomes.code;
import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeExpandVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsResponse;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeCapability.AccessMode.Mode;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.testing.HostRequirements;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The node rules that hold for every backend, over the real unix socket on real devices: one
 * publish target for SINGLE_NODE_SINGLE_WRITER, "which volume" before "which path", ALREADY_EXISTS
 * for an incompatible repeat, no OK for a stage whose grow failed, and paths confined to the allowed
 * roots without following symlinks. Paths are below {@link PluginFixture#root}, Nomad's mount root.
 */
abstract class NodeRulesConformance {
  private static final String USAGE = "rw-file-system-single-node-writer";

  private PluginFixture f;

  abstract TestBackend backend();

  @AfterEach
  void stop() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  private PluginFixture start() throws IOException {
    f = PluginFixture.start(backend());
    return f;
  }

  // ---- 1. SINGLE_NODE_SINGLE_WRITER: one publish target per node ---------------------------------

  @Test
  void singleNodeSingleWriterRefusesASecondTarget() throws IOException {
    start();
    VolumeCapability cap = Caps.mount("ext4", Mode.SINGLE_NODE_SINGLE_WRITER);
    String id = create("sole", cap);
    Path staging = f.dir("staging/default/sole/rw-file-system-single-node-single-writer");
    Path first = target("a1", "sole");
    Path second = target("a2", "sole");
    stage(id, staging, cap);
    publish(id, staging, first, cap, false);

    StatusRuntimeException refused = error(() -> publish(id, staging, second, cap, false));
    assertThat(refused.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(refused.getStatus().getDescription()).contains(first.toString(), "SINGLE_NODE_SINGLE_WRITER");
    assertThat(second).doesNotExist();
    publish(id, staging, first, cap, false); // the one target stays idempotent

    unpublish(id, first);
    publish(id, staging, second, cap, false); // free again once the first is gone
    unpublish(id, second);
    unstage(id, staging);
    delete(id);
  }

  /**
   * SINGLE_NODE_WRITER keeps allowing several targets on one node, by choice: Nomad runs several
   * allocations of one volume on a node (a target each), and Kubernetes reads ReadWriteOnce the same way.
   */
  @ParameterizedTest
  @EnumSource(value = Mode.class, names = {"SINGLE_NODE_WRITER", "SINGLE_NODE_MULTI_WRITER", "SINGLE_NODE_READER_ONLY"})
  void otherSingleNodeModesAllowSeveralTargets(Mode mode) throws IOException {
    start();
    VolumeCapability cap = Caps.mount("ext4", mode);
    String id = create("multi", Caps.mount("ext4"));
    Path staging = f.dir("staging/default/multi/" + mode);
    if (mode == Mode.SINGLE_NODE_READER_ONLY) { // a read-only stage never formats: one read-write stage does
      Path writer = f.dir("staging/default/multi/format");
      stage(id, writer, Caps.mount("ext4"));
      unstage(id, writer);
    }
    stage(id, staging, cap);
    Path first = target("a1", "multi");
    Path second = target("a2", "multi");
    publish(id, staging, first, cap, false);
    publish(id, staging, second, cap, false);
    assertThat(MountTable.isMountPoint(first)).isTrue();
    assertThat(MountTable.isMountPoint(second)).isTrue();
    unpublish(id, first);
    unpublish(id, second);
    unstage(id, staging);
    delete(id);
  }

  @Test
  void theSoleTargetRuleHoldsAfterARestartAndForEitherSide() throws IOException {
    start();
    VolumeCapability sole = Caps.mount("ext4", Mode.SINGLE_NODE_SINGLE_WRITER);
    VolumeCapability multi = Caps.mount("ext4", Mode.SINGLE_NODE_MULTI_WRITER);
    String id = create("restart-sole", sole);
    Path staging = f.dir("staging/default/restart-sole/" + USAGE);
    stage(id, staging, sole);
    Path first = target("a1", "restart-sole");
    Path second = target("a2", "restart-sole");
    publish(id, staging, first, sole, false);

    f.restart(); // the access mode of each target comes back from the journal

    assertThat(code(() -> publish(id, staging, second, multi, false)))
        .as("a second target while a SINGLE_NODE_SINGLE_WRITER target exists").isEqualTo(Code.FAILED_PRECONDITION);
    unpublish(id, first);
    publish(id, staging, first, multi, false);
    assertThat(code(() -> publish(id, staging, second, sole, false)))
        .as("a SINGLE_NODE_SINGLE_WRITER target while another target exists").isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(second).doesNotExist();
    unpublish(id, first);
    unstage(id, staging);
    delete(id);
  }

  // ---- 2. which volume before which path -----------------------------------------------------------

  @Test
  void aVolumeThisNodeDoesNotKnowIsNotFoundWhateverThePath() throws IOException {
    start();
    VolumeCapability cap = Caps.mount("ext4");
    String gone = create("gone", cap);
    delete(gone); // a well-formed id of a volume that does not exist
    String unstaged = create("unstaged", cap); // exists, but nothing of it is on this node
    Path staging = f.dir("staging/default/x/" + USAGE);
    Path target = target("a1", "x");
    String outside = f.work.resolve("outside/x").toString();
    for (String path : List.of("relative/path", f.root + "/staging/../../etc", f.root + "/./x", outside,
        staging.toString())) {
      for (String id : List.of(gone, unstaged)) {
        assertThat(code(() -> stats(id, path))).as("stats %s at %s", id, path).isEqualTo(Code.NOT_FOUND);
        assertThat(code(() -> f.node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(id)
            .setVolumePath(path).build()))).as("expand %s at %s", id, path).isEqualTo(Code.NOT_FOUND);
        // nothing of it here, so nothing to undo
        assertThat(code(() -> f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
            .setTargetPath(path).build()))).as("unpublish %s at %s", id, path).isEqualTo(Code.OK);
        assertThat(code(() -> f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
            .setStagingTargetPath(path).build()))).as("unstage %s at %s", id, path).isEqualTo(Code.OK);
      }
      assertThat(code(() -> f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(gone)
          .setStagingTargetPath(path).setVolumeCapability(cap).build()))).as("stage at %s", path)
          .isEqualTo(Code.NOT_FOUND);
      assertThat(code(() -> f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(gone)
          .setStagingTargetPath(staging.toString()).setTargetPath(path).setVolumeCapability(cap).build())))
          .as("publish at %s", path).isEqualTo(Code.NOT_FOUND);
    }
    // a volume that exists but is not staged here: its request is checked, then the state
    assertThat(code(() -> f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(unstaged)
        .setStagingTargetPath(staging.toString()).setTargetPath("relative/path").setVolumeCapability(cap).build())))
        .isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> publish(unstaged, staging, target, cap, false))).isEqualTo(Code.FAILED_PRECONDITION);
    // empty required fields are still INVALID_ARGUMENT, known volume or not
    assertThat(code(() -> stats(gone, ""))).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> stats("", staging.toString()))).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> f.node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(gone).build())))
        .isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(gone)
        .setVolumeCapability(cap).build()))).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(gone)
        .build()))).isEqualTo(Code.INVALID_ARGUMENT);
    // the spec's own row: publish without staging_target_path while the plugin stages
    assertThat(code(() -> f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(unstaged)
        .setTargetPath(target.toString()).setVolumeCapability(cap).build()))).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(f.ourMounts()).isEmpty();
    assertThat(Path.of(outside)).doesNotExist();
    delete(unstaged);
  }

  /**
   * NodeGetVolumeStats has one row, "volume does not exist at volume_path": NOT_FOUND for any path the
   * volume is not at, however it is spelt (relative, with dot segments, outside the allowed roots);
   * only an empty one is a missing field. NodeUnstageVolume has no such row: a malformed path stays
   * the general invalid value.
   */
  @Test
  void statsAtAPathTheVolumeIsNotAtIsNotFoundHoweverItIsSpelt() throws IOException {
    start();
    VolumeCapability cap = Caps.mount("ext4");
    String id = create("known", cap);
    Path staging = f.dir("staging/default/known/" + USAGE);
    stage(id, staging, cap);
    String relative = f.root.relativize(staging).toString();
    for (String bad : List.of("relative/path", relative, f.root + "/staging/../../etc", f.root + "/./x", "/etc")) {
      var e = error(() -> stats(id, bad));
      assertThat(e.getStatus().getCode()).as(bad).isEqualTo(Code.NOT_FOUND);
      assertThat(e.getStatus().getDescription()).as(bad).contains("volume_path");
    }
    assertThat(code(() -> stats(id, ""))).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(stats(id, staging.toString()).getVolumeCondition().getAbnormal()).isFalse();
    for (String bad : List.of("relative/path", f.root + "/staging/../../etc", f.root + "/./x")) {
      assertThat(code(() -> f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
          .setStagingTargetPath(bad).build()))).as(bad).isEqualTo(Code.INVALID_ARGUMENT);
    }
    assertThat(code(() -> stats(id, f.root.resolve("per-alloc/none").toString()))).isEqualTo(Code.NOT_FOUND);
    unstage(id, staging);
    delete(id);
  }

  // ---- 3. an incompatible repeat is ALREADY_EXISTS ---------------------------------------------------

  @Test
  void aRestageWithAnotherCapabilityIsAlreadyExists() throws IOException {
    start();
    VolumeCapability cap = Caps.mount("ext4");
    String id = create("restage", cap);
    Path staging = f.dir("staging/default/restage/" + USAGE);
    stage(id, staging, cap);
    for (VolumeCapability other : List.of(
        Caps.mount("ext4", Mode.SINGLE_NODE_WRITER, "noatime"),
        Caps.mount("ext4", Mode.SINGLE_NODE_READER_ONLY),
        Caps.mount("ext4", Mode.SINGLE_NODE_MULTI_WRITER))) {
      StatusRuntimeException e = error(() -> stage(id, staging, other));
      assertThat(e.getStatus().getCode()).as(other.toString()).isEqualTo(Code.ALREADY_EXISTS);
      assertThat(e.getStatus().getDescription()).contains("staging_target_path", staging.toString());
    }
    assertThat(MountTable.at(staging)).get().satisfies(m -> {
      assertThat(m.readOnly()).isFalse();
      assertThat(m.mountOptions().split(",")).doesNotContain("noatime");
    });
    stage(id, staging, cap); // the identical repeat stays OK
    unstage(id, staging);
    delete(id);
  }

  @Test
  void aRepublishWithAnotherCapabilityIsAlreadyExists() throws IOException {
    start();
    VolumeCapability cap = Caps.mount("ext4");
    String id = create("republish", cap);
    Path staging = f.dir("staging/default/republish/" + USAGE);
    Path target = target("a1", "republish");
    stage(id, staging, cap);
    publish(id, staging, target, cap, false);
    assertThat(code(() -> publish(id, staging, target, Caps.mount("ext4", Mode.SINGLE_NODE_MULTI_WRITER), false)))
        .as("another access mode").isEqualTo(Code.ALREADY_EXISTS);
    assertThat(code(() -> publish(id, staging, target, Caps.mount("ext4", Mode.SINGLE_NODE_WRITER, "nosuid"), false)))
        .as("other mount flags").isEqualTo(Code.ALREADY_EXISTS);
    assertThat(code(() -> publish(id, staging, target, cap, true))).as("readonly").isEqualTo(Code.ALREADY_EXISTS);
    assertThat(code(() -> publish(id, staging, target, Caps.block(), false))).as("block access")
        .isEqualTo(Code.ALREADY_EXISTS);
    assertThat(code(() -> publish(id, staging, target, Caps.mount("xfs"), false))).as("another filesystem")
        .isEqualTo(Code.ALREADY_EXISTS);
    publish(id, staging, target, cap, false);
    assertThat(MountTable.at(target)).get().satisfies(m -> assertThat(m.readOnly()).isFalse());
    unpublish(id, target);
    unstage(id, staging);
    delete(id);
  }

  /**
   * Once staged, a volume's capability is fixed on this node: a publish unlike the stage is the spec's
   * "capability not supported" (FAILED_PRECONDITION), a NodeExpandVolume capability unlike it is
   * INVALID_ARGUMENT, and a NodeExpandVolume limit below the volume's size is OUT_OF_RANGE.
   */
  @Test
  void aCapabilityUnlikeTheStageIsRefused() throws IOException {
    start();
    VolumeCapability cap = Caps.mount("ext4");
    String id = create("unlike", cap);
    Path staging = f.dir("staging/default/unlike/" + USAGE);
    Path target = target("a1", "unlike");
    stage(id, staging, cap);
    assertThat(code(() -> publish(id, staging, target, Caps.mount("xfs"), false))).as("another filesystem")
        .isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(code(() -> publish(id, staging, target, Caps.block(), false))).as("block access")
        .isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(Files.exists(target, LinkOption.NOFOLLOW_LINKS)).as("nothing made at the target").isFalse();
    publish(id, staging, target, Caps.mount(""), false);

    for (VolumeCapability other : List.of(Caps.block(), Caps.mount("xfs"))) {
      StatusRuntimeException e = error(() -> f.node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder()
          .setVolumeId(id).setVolumePath(target.toString()).setVolumeCapability(other).build()));
      assertThat(e.getStatus().getCode()).as("NodeExpand with %s", other).isEqualTo(Code.INVALID_ARGUMENT);
      assertThat(e.getStatus().getDescription()).contains("volume_capability").contains("staged for a ext4 mount");
    }
    long size = f.node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(id)
        .setVolumePath(target.toString()).setVolumeCapability(cap).build()).getCapacityBytes();
    StatusRuntimeException below = error(() -> f.node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder()
        .setVolumeId(id).setVolumePath(target.toString()).setCapacityRange(Caps.range(0, size - 4096)).build()));
    assertThat(below.getStatus().getCode()).isEqualTo(Code.OUT_OF_RANGE);
    assertThat(below.getStatus().getDescription()).contains("limit_bytes").contains("only grow");
    unpublish(id, target);
    unstage(id, staging);
    delete(id);
  }

  /**
   * A staging path is the volume's own: never where a volume is published, nor where (or inside or
   * above where) another volume is staged. A mount there would hide that volume from its workload.
   */
  @Test
  void aStagingPathAlreadyClaimedIsRefused() throws IOException {
    start();
    VolumeCapability cap = Caps.mount("ext4");
    String first = create("claimed-a", cap);
    String second = create("claimed-b", Caps.block());
    Path staging = f.dir("staging/default/claimed-a/" + USAGE);
    Path target = target("a1", "claimed-a");
    stage(first, staging, cap);
    publish(first, staging, target, cap, false);
    Path inside = f.dir("staging/default/claimed-a/" + USAGE + "/inside");

    for (Path claimed : List.of(target, staging, inside, staging.getParent())) {
      StatusRuntimeException e = error(() -> stage(second, claimed, Caps.block()));
      assertThat(e.getStatus().getCode()).as(claimed.toString()).isEqualTo(Code.INVALID_ARGUMENT);
      assertThat(e.getStatus().getDescription()).as(claimed.toString()).startsWith("staging_target_path")
          .contains("volume " + first);
    }
    StatusRuntimeException own = error(() -> stage(first, target, cap));
    assertThat(own.getStatus().getCode()).as("its own publish target").isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> stats(second, staging.toString()))).as("the refused stages left nothing")
        .isEqualTo(Code.NOT_FOUND);
    assertThat(MountTable.at(target)).isPresent();
    unpublish(first, target);
    unstage(first, staging);
    delete(first);
    delete(second);
  }

  // ---- 4. a stage is OK only when every step of it succeeded -------------------------------------------

  /**
   * A real failure of the grow step: the ext4 filesystem carries the error flag (as after a kernel
   * error), and the kernel refuses to resize a mounted filesystem with errors (ext4_resize_begin; on
   * a host without CAP_SYS_RESOURCE it refuses for that reason first). The volume is mounted at a
   * first staging path, so the second stage cannot grow it unmounted and must grow it online.
   */
  @Test
  void aStageWhoseGrowFailsAnswersAnErrorAndItsRetryGrowsAgain() throws Exception {
    start();
    HostRequirements.assume(HostRequirements.whyNoTools("e2fsprogs", "tune2fs", "resize2fs", "e2fsck"));
    VolumeCapability cap = Caps.mount("ext4");
    long size = f.backend.sizeFor("ext4");
    String id = create("grow-fails", cap);
    Path a = f.dir("staging/default/grow-fails/" + USAGE);
    Path b = f.dir("staging/default/grow-fails/rw-file-system-single-node-multi-writer");
    stage(id, a, cap); // formats
    long before = Files.getFileStore(a).getTotalSpace();
    unstage(id, a);
    Path raw = f.dir("staging/default/grow-fails/rw-block-device-single-node-writer");
    stage(id, raw, Caps.block());
    Path device = f.plugin().engine().journal().get(id).orElseThrow().device().orElseThrow();
    run("tune2fs", "-E", "force_fsck", device.toString()); // sets the filesystem's error flag
    unstage(id, raw);
    stage(id, a, cap); // mounts the filesystem with its error flag (nothing to grow yet)
    f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(id)
        .setCapacityRange(Caps.bytes(size * 2)).build());

    for (int attempt = 1; attempt <= 2; attempt++) {
      StatusRuntimeException failed = error(() -> stage(id, b, Caps.mount("ext4", Mode.SINGLE_NODE_MULTI_WRITER)));
      assertThat(failed.getStatus().getCode()).as("attempt %d", attempt).isNotEqualTo(Code.OK);
      assertThat(failed.getStatus().getDescription()).as("attempt %d", attempt).contains("grow", b.toString());
      assertThat(MountTable.isMountPoint(b)).as("what the failed stage mounted is undone").isFalse();
      assertThat(MountTable.isMountPoint(a)).isTrue();
    }

    unstage(id, a); // unmounted now: the next stage grows it unmounted, after e2fsck clears the flag
    stage(id, b, Caps.mount("ext4", Mode.SINGLE_NODE_MULTI_WRITER));
    assertThat(Files.getFileStore(b).getTotalSpace()).isGreaterThan(before + size / 2);
    unstage(id, b);
    delete(id);
  }

  /**
   * The journal record a plugin killed between a stage's mount and its grow leaves behind when the
   * volume is staged at another path already (the new staging path recorded, not complete; the device
   * recorded by the first stage): the next stage there must run the remaining steps although the
   * mount is present and a device is known.
   */
  @Test
  void aStageCutShortAfterItsMountIsFinishedByTheNextStage() throws Exception {
    start();
    HostRequirements.assumeXfs();
    VolumeCapability cap = Caps.mount("xfs");
    long size = f.backend.sizeFor("xfs");
    String id = create("cut-short", cap);
    Path first = f.dir("staging/default/cut-short/" + USAGE);
    Path second = f.dir("staging/default/cut-short/rw-file-system-single-node-multi-writer");
    VolumeCapability secondCap = Caps.mount("xfs", Mode.SINGLE_NODE_MULTI_WRITER);
    stage(id, first, cap);
    stage(id, second, secondCap);
    long before = Files.getFileStore(second).getTotalSpace();
    f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(id)
        .setCapacityRange(Caps.bytes(size * 2)).build());
    Path record = f.plugin().engine().journal().file(id);
    f.stopPlugin();
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(record, StandardCharsets.UTF_8)) {
      p.load(r);
    }
    assertThat(p.getProperty("device")).as("recorded by the first stage").isNotNull();
    Path secondReal = second.toRealPath();
    String key = p.stringPropertyNames().stream().filter(k -> k.matches("staging\\.\\d+"))
        .filter(k -> Path.of(p.getProperty(k)).equals(secondReal)).findFirst().orElseThrow();
    p.setProperty(key + ".complete", "false");
    try (Writer w = Files.newBufferedWriter(record, StandardCharsets.UTF_8)) {
      p.store(w, "as a kill between the second stage's mount and its grow leaves it");
    }
    f.startPlugin();
    assertThat(MountTable.isMountPoint(second)).isTrue();

    stage(id, second, secondCap);

    assertThat(Files.getFileStore(second).getTotalSpace()).isGreaterThan(before + size / 2);
    stage(id, second, secondCap); // complete now: the repeat is a plain OK
    unstage(id, second);
    unstage(id, first);
    delete(id);
  }

  /**
   * A read-only stage (an {@code ro} mount flag) of a volume that grew cannot grow its filesystem and
   * is not an error: the next read-write stage grows it.
   */
  @Test
  void aReadOnlyStageOfAGrownVolumeLeavesTheGrowToTheNextReadWriteStage() throws IOException {
    start();
    HostRequirements.assumeXfs();
    VolumeCapability cap = Caps.mount("xfs");
    VolumeCapability ro = Caps.mount("xfs", Mode.SINGLE_NODE_WRITER, "ro");
    long size = f.backend.sizeFor("xfs");
    String id = create("ro-grown", cap);
    Path staging = f.dir("staging/default/ro-grown/" + USAGE);
    Path roStaging = f.dir("staging/default/ro-grown/ro-" + USAGE);
    stage(id, staging, cap);
    long before = Files.getFileStore(staging).getTotalSpace();
    unstage(id, staging);
    f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(id)
        .setCapacityRange(Caps.bytes(size * 2)).build());

    stage(id, roStaging, ro);
    assertThat(MountTable.at(roStaging)).get().satisfies(m -> assertThat(m.readOnly()).isTrue());
    assertThat(Files.getFileStore(roStaging).getTotalSpace()).isEqualTo(before);
    unstage(id, roStaging);
    stage(id, staging, cap);
    assertThat(Files.getFileStore(staging).getTotalSpace()).isGreaterThan(before + size / 2);
    unstage(id, staging);
    delete(id);
  }

  // ---- 5. paths stay below the allowed roots, and no symlink is followed ---------------------------------

  @Test
  void pathsOutsideTheAllowedRootsAreRefusedBeforeAnythingIsCreated() throws IOException {
    start();
    VolumeCapability cap = Caps.mount("ext4");
    String id = create("confined", cap);
    Path outsideStaging = f.work.resolve("elsewhere/staging/confined");
    StatusRuntimeException e = error(() -> stage(id, outsideStaging, cap));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(e.getStatus().getDescription())
        .contains("staging_target_path", outsideStaging.toString(), f.work.resolve("client/csi").toRealPath().toString(),
            "allowed root");
    assertThat(f.work.resolve("elsewhere")).doesNotExist();
    assertThat(f.plugin().engine().journal().get(id)).isEmpty();
    assertThat(f.ourLoops()).isEmpty();

    Path staging = f.dir("staging/default/confined/" + USAGE);
    stage(id, staging, cap);
    Path outsideTarget = f.work.resolve("elsewhere/target");
    StatusRuntimeException p = error(() -> publish(id, staging, outsideTarget, cap, false));
    assertThat(p.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(p.getStatus().getDescription()).contains("target_path", outsideTarget.toString());
    assertThat(f.work.resolve("elsewhere")).doesNotExist();
    assertThat(f.ourMounts()).extracting(m -> m.mountPoint()).containsExactly(staging.toRealPath());
    unstage(id, staging);
    delete(id);
  }

  @Test
  void aSymlinkBelowTheRootOrAtThePathIsRefused() throws IOException {
    start();
    VolumeCapability cap = Caps.mount("ext4");
    String id = create("linked", cap);
    Path staging = f.dir("staging/default/linked/" + USAGE);
    stage(id, staging, cap);
    Path outside = Files.createDirectories(f.work.resolve("outside"));
    Path inside = f.dir("per-alloc/real/linked");

    Files.createDirectories(f.root.resolve("per-alloc/a1"));
    Files.createSymbolicLink(f.root.resolve("per-alloc/a1/linked"), outside);
    Path escaping = f.root.resolve("per-alloc/a1/linked/" + USAGE);
    StatusRuntimeException e = error(() -> publish(id, staging, escaping, cap, false));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(e.getStatus().getDescription()).contains("target_path", "symlink", f.root.resolve("per-alloc/a1/linked").toString());
    assertThat(outside.resolve(USAGE)).doesNotExist();

    Files.createDirectories(f.root.resolve("per-alloc/a2"));
    Files.createSymbolicLink(f.root.resolve("per-alloc/a2/linked"), inside);
    assertThat(code(() -> publish(id, staging, f.root.resolve("per-alloc/a2/linked/" + USAGE), cap, false)))
        .as("a symlink below the root, even to a place inside it").isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(inside.resolve(USAGE)).doesNotExist();

    Path linkedTarget = Files.createSymbolicLink(f.dir("per-alloc/a3/linked").resolve(USAGE), inside);
    assertThat(code(() -> publish(id, staging, linkedTarget, cap, false))).as("a symlink at the target itself")
        .isEqualTo(Code.INVALID_ARGUMENT);
    Path linkedStaging = Files.createSymbolicLink(f.dir("staging/default/other").resolve(USAGE), inside);
    assertThat(code(() -> stage(id, linkedStaging, cap))).as("a symlink at the staging path itself")
        .isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(f.ourMounts()).extracting(m -> m.mountPoint()).containsExactly(staging.toRealPath());
    unstage(id, staging);
    delete(id);
  }

  @Test
  void unpublishNeverFollowsASymlinkToAnotherMount() throws IOException {
    start();
    VolumeCapability cap = Caps.mount("ext4");
    String id = create("lure", cap);
    Path staging = f.dir("staging/default/lure/" + USAGE);
    Path target = target("a1", "lure");
    stage(id, staging, cap);
    publish(id, staging, target, cap, false);
    Path lure = Files.createSymbolicLink(f.dir("per-alloc/a2/lure").resolve(USAGE), staging);

    assertThat(code(() -> unpublish(id, lure))).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(MountTable.isMountPoint(staging)).as("the staging mount the link points at").isTrue();
    assertThat(MountTable.isMountPoint(target)).isTrue();
    assertThat(Files.isSymbolicLink(lure)).isTrue();

    Files.delete(lure);
    unpublish(id, target);
    unstage(id, staging);
    delete(id);
  }

  /**
   * Nomad's data directory reached through a symlink: requests spell paths through the link, the
   * mount table shows them resolved. A restart must still know the live targets (and so refuse the
   * early unstage) instead of forgetting them.
   */
  @Test
  void liveTargetsBehindASymlinkedDataDirectorySurviveARestart() throws IOException {
    start();
    Path link = Files.createSymbolicLink(f.work.resolve("nomad-data"), f.work.resolve("client"));
    Path root = link.resolve(f.work.resolve("client").relativize(f.root));
    VolumeCapability cap = Caps.mount("ext4");
    String id = create("behind-link", cap);
    Path staging = Files.createDirectories(root.resolve("staging/default/behind-link/" + USAGE));
    Path target = Files.createDirectories(root.resolve("per-alloc/a1/behind-link")).resolve(USAGE);
    stage(id, staging, cap);
    publish(id, staging, target, cap, false);
    Files.writeString(target.resolve("kept.txt"), "through the link");

    f.restart();

    StatusRuntimeException early = error(() -> unstage(id, staging));
    assertThat(early.getStatus().getCode()).as("unstage while the target is live").isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(MountTable.isMountPoint(staging)).isTrue();
    assertThat(stats(id, target.toString()).getVolumeCondition().getAbnormal()).isFalse();
    assertThat(stats(id, f.root.resolve("per-alloc/a1/behind-link/" + USAGE).toString()).getVolumeCondition()
        .getAbnormal()).as("the same target, spelt without the link").isFalse();
    publish(id, staging, target, cap, false); // still recorded: the repeat is idempotent
    assertThat(target.resolve("kept.txt")).hasContent("through the link");
    unpublish(id, target);
    assertThat(Files.exists(target, LinkOption.NOFOLLOW_LINKS)).isFalse();
    unstage(id, staging);
    assertThat(f.ourMounts()).isEmpty();
    delete(id);
  }

  // ---- helpers ---------------------------------------------------------------------------------------

  private String create(String name, VolumeCapability cap) {
    String fs = cap.hasMount() ? cap.getMount().getFsType() : "ext4";
    return f.controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(f.backend.sizeFor(fs))).build()).getVolume().getVolumeId();
  }

  private Path target(String alloc, String volume) throws IOException {
    return f.dir("per-alloc/" + alloc + "/" + volume).resolve(USAGE);
  }

  private void stage(String id, Path staging, VolumeCapability cap) {
    f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setVolumeCapability(cap).build());
  }

  private void publish(String id, Path staging, Path target, VolumeCapability cap, boolean readOnly) {
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setTargetPath(target.toString()).setVolumeCapability(cap).setReadonly(readOnly).build());
  }

  private void unpublish(String id, Path target) {
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString()).build());
  }

  private void unstage(String id, Path staging) {
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).build());
  }

  private NodeGetVolumeStatsResponse stats(String id, String path) {
    return f.node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id).setVolumePath(path).build());
  }

  private void delete(String id) {
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
  }

  /** Runs a host tool as the test's oracle or saboteur; fails the test if it fails. */
  private static void run(String... command) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
      throw new AssertionError(String.join(" ", command) + " failed: " + out);
    }
  }
}
