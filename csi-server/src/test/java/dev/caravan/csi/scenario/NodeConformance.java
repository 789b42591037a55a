package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.code;
import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.ControllerUnpublishVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.NodeExpandVolumeRequest;
import dev.caravan.csi.v1.NodeGetCapabilitiesRequest;
import dev.caravan.csi.v1.NodeGetInfoRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsResponse;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeServiceCapability;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeCapability.AccessMode.Mode;
import dev.caravan.csi.v1.VolumeContentSource;
import dev.caravan.csi.v1.VolumeUsage;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.HostRequirements;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ArgumentsSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Node service on one backend: real devices (loop devices, zvols), real ext4 and xfs, over a real
 * unix socket. What a test checks is what the CO and the workload see (status codes, the mount table,
 * the data), and the backend's storage through {@link TestBackend}'s oracle; nothing here knows how a
 * backend lays out its storage.
 */
abstract class NodeConformance {
  private PluginFixture f;

  /** The backend this suite runs on. */
  abstract TestBackend backend();

  @BeforeEach
  void start() throws IOException {
    f = PluginFixture.start(backend());
  }

  @AfterEach
  void stop() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  private long sizeFor(String fs) {
    return f.backend.sizeFor(fs);
  }

  /** Volume contexts by id, for a backend whose NodeStage needs them (Nomad always sends them). */
  private final java.util.Map<String, java.util.Map<String, String>> contexts = new java.util.HashMap<>();

  private Volume create(String name, VolumeCapability cap, long bytes) {
    return remember(f.controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(bytes)).build()).getVolume());
  }

  /** Volumes ControllerPublished to this node (on a backend that publishes). */
  private final java.util.Set<String> published = new java.util.HashSet<>();

  private Volume remember(Volume v) {
    contexts.put(v.getVolumeId(), v.getVolumeContextMap());
    return v;
  }

  /** {@code n} MiB as this backend sizes volumes ({@link TestBackend#scaled}). */
  private long mib(long n) {
    return f.backend.scaled(n * MIB);
  }

  /** A staging directory as Nomad makes one: per volume and usage, below the plugin's mount root. */
  private Path staging(String label) throws IOException {
    return f.dir("staging/default/" + label + "/rw-file-system-single-node-writer");
  }

  /** A publish target: the CO creates its parent, the plugin the target itself. */
  private Path target(String alloc, String label) throws IOException {
    return f.dir("per-alloc/" + alloc + "/" + label).resolve("rw-file-system-single-node-writer");
  }

  private void stage(String id, Path staging, VolumeCapability cap) {
    if (f.backend.publishes() && published.add(id)) { // as Nomad does first (qnap: the ACL admits this node)
      f.controller.controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id)
          .setNodeId(f.backend.nodeId()).setVolumeCapability(cap).build());
    }
    NodeStageVolumeRequest.Builder r = NodeStageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(cap);
    if (f.backend.stageNeedsContext()) {
      r.putAllVolumeContext(contexts.getOrDefault(id, java.util.Map.of()));
    }
    f.node.nodeStageVolume(r.build());
  }

  private void publish(String id, Path staging, Path target, VolumeCapability cap, boolean ro) {
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setTargetPath(target.toString()).setVolumeCapability(cap).setReadonly(ro).build());
  }

  private void unpublish(String id, Path target) {
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString()).build());
  }

  private void unstage(String id, Path staging) {
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString()).build());
  }

  private NodeGetVolumeStatsResponse stats(String id, Path path) {
    return f.node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id).setVolumePath(path.toString()).build());
  }

  private static VolumeUsage usage(NodeGetVolumeStatsResponse r, VolumeUsage.Unit unit) {
    return r.getUsageList().stream().filter(u -> u.getUnit() == unit).findFirst().orElseThrow();
  }

  private void delete(String id) {
    if (published.remove(id)) {
      f.controller.controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id)
          .setNodeId(f.backend.nodeId()).build());
    }
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
  }

  @ParameterizedTest
  @ValueSource(strings = {"ext4", "xfs"})
  void mountLifecycleIsIdempotentAndGuarded(String fs) throws IOException {
    if (fs.equals("xfs")) {
      HostRequirements.assumeLoopAndExt4();
      HostRequirements.assumeXfs();
    }
    VolumeCapability cap = Caps.mount(fs);
    Volume v = create("life-" + fs, cap, sizeFor(fs));
    String id = v.getVolumeId();
    Path staging = staging("life");
    Path target = target("a1", "life");
    Path roTarget = f.dir("per-alloc/a2/life").resolve("ro-file-system-single-node-writer");

    stage(id, staging, cap);
    stage(id, staging, cap);
    assertThat(MountTable.at(staging)).get().satisfies(m -> assertThat(m.fsType()).isEqualTo(fs));
    publish(id, staging, target, cap, false);
    publish(id, staging, target, cap, false);
    Files.writeString(target.resolve("data.txt"), "caravan " + fs);
    assertThat(Files.readString(staging.resolve("data.txt"))).isEqualTo("caravan " + fs);

    publish(id, staging, roTarget, cap, true);
    assertThat(Files.readString(roTarget.resolve("data.txt"))).isEqualTo("caravan " + fs);
    assertThatThrownBy(() -> Files.writeString(roTarget.resolve("nope.txt"), "x")).isInstanceOf(IOException.class);
    assertThat(code(() -> publish(id, staging, target, cap, true))).isEqualTo(Code.ALREADY_EXISTS);
    // Staged for mount, asked for block: ALREADY_EXISTS, unless the request carries the volume's
    // context, whose access types (mount only) refuse block access first.
    assertThat(code(() -> stage(id, staging, Caps.block())))
        .isEqualTo(f.backend.stageNeedsContext() ? Code.FAILED_PRECONDITION : Code.ALREADY_EXISTS);

    NodeGetVolumeStatsResponse st = stats(id, target);
    assertThat(st.getVolumeCondition().getAbnormal()).isFalse();
    assertThat(usage(st, VolumeUsage.Unit.BYTES).getTotal()).isPositive();
    assertThat(usage(st, VolumeUsage.Unit.INODES).getUsed()).isPositive();

    var early = error(() -> unstage(id, staging));
    assertThat(early.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(early.getStatus().getDescription()).contains(target.toString());
    assertThat(MountTable.isMountPoint(staging)).isTrue();
    // DeleteVolume alone: delete() would ControllerUnpublish first, taking this node out of the ACL.
    assertThat(code(() -> f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build())))
        .as("delete while staged").isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(f.controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(id).build())
        .getStatus().getPublishedNodeIdsList()).containsExactly(f.backend.nodeId());

    unpublish(id, roTarget);
    unpublish(id, target);
    unpublish(id, target);
    assertThat(target).doesNotExist();
    unstage(id, staging);
    unstage(id, staging);
    assertThat(MountTable.isMountPoint(staging)).isFalse();
    assertThat(f.backend.attachedDevices(f.work)).isEmpty();

    // staged again later: the data is still there (never reformatted)
    stage(id, staging, cap);
    assertThat(Files.readString(staging.resolve("data.txt"))).isEqualTo("caravan " + fs);
    unstage(id, staging);
    delete(id);
    assertThat(f.storageObjects()).isEmpty();
  }

  @ParameterizedTest
  @ArgumentsSource(GrowthFilesystems.class)
  void expansionIsSeenByStatvfs(String fs) throws IOException {
    if (fs.equals("xfs")) {
      HostRequirements.assumeLoopAndExt4();
      HostRequirements.assumeXfs();
    }
    HostRequirements.assumeOnlineGrow(fs);
    VolumeCapability cap = Caps.mount(fs);
    String id = create("grow-" + fs, cap, sizeFor(fs)).getVolumeId();
    Path staging = staging("grow");
    Path target = target("a1", "grow");
    stage(id, staging, cap);
    publish(id, staging, target, cap, false);
    long before = Files.getFileStore(target).getTotalSpace();
    long wanted = sizeFor(fs) * 2;
    var r = f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(id)
        .setCapacityRange(Caps.bytes(wanted)).setVolumeCapability(cap).build());
    assertThat(r.getCapacityBytes()).isEqualTo(wanted);
    assertThat(r.getNodeExpansionRequired()).isTrue();
    assertThat(f.backend.storedSize(f.work, id)).isEqualTo(wanted);
    long device = f.node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(id).setVolumePath(target.toString())
        .setStagingTargetPath(staging.toString()).setCapacityRange(Caps.bytes(wanted)).build()).getCapacityBytes();
    assertThat(device).isEqualTo(wanted);
    long after = Files.getFileStore(target).getTotalSpace();
    assertThat(after).isGreaterThan(before + sizeFor(fs) / 2);
    assertThat(usage(stats(id, target), VolumeUsage.Unit.BYTES).getTotal()).isEqualTo(after);
    // repeated NodeExpand is harmless
    f.node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(id).setVolumePath(target.toString()).build());
    unpublish(id, target);
    unstage(id, staging);
    delete(id);
  }

  @ParameterizedTest
  @ArgumentsSource(GrowthFilesystems.class)
  void aVolumeGrownWhileUnstagedIsGrownAtTheNextStage(String fs) throws IOException {
    if (fs.equals("xfs")) {
      HostRequirements.assumeLoopAndExt4();
      HostRequirements.assumeXfs();
    }
    VolumeCapability cap = Caps.mount(fs);
    String id = create("grow-unstaged-" + fs, cap, sizeFor(fs)).getVolumeId();
    Path staging = staging("grow-unstaged");
    stage(id, staging, cap);
    Files.writeString(staging.resolve("kept.txt"), "across the grow");
    long before = Files.getFileStore(staging).getTotalSpace();
    unstage(id, staging);
    // Nomad sends no NodeExpand for a volume nobody claims: the next stage must grow it itself.
    f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(id)
        .setCapacityRange(Caps.bytes(sizeFor(fs) * 2)).build());
    stage(id, staging, cap);
    assertThat(Files.getFileStore(staging).getTotalSpace()).isGreaterThan(before + sizeFor(fs) / 2);
    assertThat(staging.resolve("kept.txt")).hasContent("across the grow");
    unstage(id, staging);
    delete(id);
  }

  /**
   * A snapshot taken while the volume is in use holds what was written before it (the plugin flushes
   * or freezes the filesystem), and clones from it and from the live volume carry the data and
   * outlive both their sources.
   */
  @Test
  void snapshotsAndClonesCarryTheDataAndOutliveTheirSources() throws IOException {
    VolumeCapability cap = Caps.mount("ext4");
    String id = create("src", cap, mib(64)).getVolumeId();
    Path staging = staging("src");
    Path target = target("a1", "src");
    stage(id, staging, cap);
    publish(id, staging, target, cap, false);
    byte[] payload = new byte[3 * (int) MIB + 123];
    new Random(42).nextBytes(payload);
    Files.write(target.resolve("payload.bin"), payload); // no fsync: the snapshot must freeze/flush
    String snap = f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(id).setName("snap").build())
        .getSnapshot().getSnapshotId();
    Files.writeString(target.resolve("after.txt"), "written after the snapshot"); // thawed again

    Volume fromSnapVolume = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("from-snap").addVolumeCapabilities(cap)
        .setVolumeContentSource(VolumeContentSource.newBuilder().setSnapshot(
            VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snap))).build()).getVolume();
    remember(fromSnapVolume);
    Volume fromVolVolume = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("from-vol").addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(mib(96)))
        .setVolumeContentSource(VolumeContentSource.newBuilder().setVolume(
            VolumeContentSource.VolumeSource.newBuilder().setVolumeId(id))).build()).getVolume();
    remember(fromVolVolume);
    String fromSnap = fromSnapVolume.getVolumeId();
    String fromVol = fromVolVolume.getVolumeId();

    // the sources go away entirely before the clones are used
    unpublish(id, target);
    unstage(id, staging);
    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snap).build());
    delete(id);
    assertThat(f.controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
        .extracting(e -> e.getVolume().getVolumeId()).containsExactlyInAnyOrder(fromSnap, fromVol);

    Path s1 = staging("from-snap");
    stage(fromSnap, s1, cap);
    assertThat(Files.readAllBytes(s1.resolve("payload.bin"))).isEqualTo(payload);
    assertThat(s1.resolve("after.txt")).doesNotExist();
    unstage(fromSnap, s1);

    Path s2 = staging("from-vol");
    stage(fromVol, s2, cap);
    assertThat(Files.readAllBytes(s2.resolve("payload.bin"))).isEqualTo(payload);
    assertThat(Files.getFileStore(s2).getTotalSpace()).isGreaterThan(mib(64)); // grown at stage
    unstage(fromVol, s2);

    delete(fromSnap);
    delete(fromVol);
    assertThat(f.storageObjects()).isEmpty();
  }

  @Test
  void blockAccessBindsTheDevice() throws IOException {
    VolumeCapability cap = Caps.block();
    String id = create("raw", cap, mib(32)).getVolumeId();
    Path staging = f.dir("staging/default/raw/rw-block-device-single-node-writer");
    Path target = f.dir("per-alloc/a1/raw").resolve("rw-block-device-single-node-writer");
    Path roTarget = f.dir("per-alloc/a2/raw").resolve("ro-block-device-single-node-writer");
    stage(id, staging, cap);
    stage(id, staging, cap); // Nomad re-stages block volumes for every allocation: must be idempotent
    publish(id, staging, target, cap, false);
    publish(id, staging, target, cap, false);
    assertThat(Files.exists(target) && !Files.isDirectory(target)).isTrue(); // a file with the device bound on it
    byte[] data = "raw block data through caravan".getBytes(java.nio.charset.StandardCharsets.UTF_8);
    try (FileChannel ch = FileChannel.open(target, StandardOpenOption.WRITE, StandardOpenOption.DSYNC)) {
      ch.write(ByteBuffer.wrap(data), 4096);
    }
    try (FileChannel ch = FileChannel.open(target, StandardOpenOption.READ)) {
      assertThat(ch.size()).isEqualTo(mib(32));
      ByteBuffer back = ByteBuffer.allocate(data.length);
      ch.read(back, 4096);
      assertThat(back.array()).isEqualTo(data);
    }
    publish(id, staging, roTarget, Caps.block(Mode.SINGLE_NODE_READER_ONLY), false);
    // The bind is read-only; note the kernel does not apply MS_RDONLY to writes *through* a device node.
    assertThat(MountTable.at(roTarget)).get().satisfies(m -> assertThat(m.readOnly()).isTrue());
    NodeGetVolumeStatsResponse st = stats(id, target);
    assertThat(usage(st, VolumeUsage.Unit.BYTES).getTotal()).isEqualTo(mib(32));
    assertThat(st.getVolumeCondition().getAbnormal()).isFalse();
    assertThat(code(() -> publish(id, staging, f.root.resolve("per-alloc/a3/x"), Caps.mount("ext4"), false)))
        .isIn(Code.INVALID_ARGUMENT, Code.FAILED_PRECONDITION);
    assertThat(code(() -> unstage(id, staging))).isEqualTo(Code.FAILED_PRECONDITION);
    unpublish(id, roTarget);
    unpublish(id, target);
    assertThat(target).doesNotExist();
    unstage(id, staging);
    assertThat(f.backend.attachedDevices(f.work)).isEmpty();
    delete(id);
  }

  @Test
  void conditionTurnsAbnormalWhenTheMountIsGone() throws IOException {
    VolumeCapability cap = Caps.mount("ext4");
    String id = create("fragile", cap, mib(32)).getVolumeId();
    Path staging = staging("fragile");
    Path target = target("a1", "fragile");
    stage(id, staging, cap);
    publish(id, staging, target, cap, false);
    assertThat(Mounts.unmount(target)).isTrue(); // our own mount, removed behind the plugin's back
    NodeGetVolumeStatsResponse st = stats(id, target);
    assertThat(st.getVolumeCondition().getAbnormal()).isTrue();
    assertThat(st.getVolumeCondition().getMessage()).contains("nothing is mounted");
    unpublish(id, target);
    unstage(id, staging);
    delete(id);
  }

  @Test
  void refusesToFormatOverAnotherFilesystem() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    HostRequirements.assumeXfs();
    String id = create("ext4-only", Caps.mount("ext4"), mib(320)).getVolumeId();
    Path staging = staging("ext4-only");
    stage(id, staging, Caps.mount("ext4"));
    Files.writeString(staging.resolve("keep.txt"), "precious");
    unstage(id, staging);
    var e = error(() -> stage(id, staging, Caps.mount("xfs")));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(e.getStatus().getDescription()).contains("refusing to format");
    assertThat(MountTable.isMountPoint(staging)).isFalse();
    assertThat(f.backend.attachedDevices(f.work)).isEmpty();
    stage(id, staging, Caps.mount("ext4"));
    assertThat(Files.readString(staging.resolve("keep.txt"))).isEqualTo("precious");
    unstage(id, staging);
    delete(id);
  }

  /**
   * Requests the plugin must refuse, each changing nothing. Where a rule is still being settled (an id
   * the plugin could never have issued: INVALID_ARGUMENT or NOT_FOUND; a mode the volume cannot take:
   * INVALID_ARGUMENT or the spec's FAILED_PRECONDITION) the test accepts what csi-spec-rules.md allows.
   */
  @Test
  void badNodeInputChangesNothing() throws IOException {
    VolumeCapability cap = Caps.mount("ext4");
    String id = create("strict", cap, mib(32)).getVolumeId();
    Path staging = staging("strict");
    String target = f.root.resolve("per-alloc/a1/strict/rw").toString();
    for (String bad : new String[] {"relative/path", f.root + "/staging/../../etc", f.root + "/./x", ""}) {
      assertThat(code(() -> f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
          .setStagingTargetPath(bad).setVolumeCapability(cap).build()))).as(bad).isEqualTo(Code.INVALID_ARGUMENT);
      assertThat(code(() -> f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
          .setStagingTargetPath(staging.toString()).setTargetPath(bad).setVolumeCapability(cap).build()))).as(bad)
          .isEqualTo(Code.INVALID_ARGUMENT);
    }
    assertThat(code(() -> f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).build()))).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(code(() -> f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId("../" + id)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(cap).build())))
        .isIn(Code.INVALID_ARGUMENT, Code.NOT_FOUND);
    assertThat(code(() -> f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(Caps.mount("ext4", Mode.MULTI_NODE_READER_ONLY)).build())))
        .isIn(Code.INVALID_ARGUMENT, Code.FAILED_PRECONDITION);
    assertThat(code(() -> f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(f.backend.absentVolumeId(f.work))
        .setStagingTargetPath(staging.toString()).setVolumeCapability(cap).build()))).isEqualTo(Code.NOT_FOUND);
    assertThat(code(() -> f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).setTargetPath(target).setVolumeCapability(cap).build())))
        .as("publish before stage").isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(code(() -> stats(id, staging))).isEqualTo(Code.NOT_FOUND);
    assertThat(code(() -> f.node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(id)
        .setVolumePath(staging.toString()).build()))).isEqualTo(Code.NOT_FOUND);
    unpublish(id, Path.of(target));
    unstage(id, staging);
    assertThat(f.ourMounts()).isEmpty();
    assertThat(f.backend.attachedDevices(f.work)).isEmpty();
    assertThat(Path.of(target)).doesNotExist();
    delete(id);
  }

  @Test
  void identityAndNodeInfoDescribeThisNode() {
    assertThat(f.identity.probe(ProbeRequest.getDefaultInstance()).getReady().getValue()).isTrue();
    var info = f.node.nodeGetInfo(NodeGetInfoRequest.getDefaultInstance());
    assertThat(info.getNodeId()).isEqualTo(f.backend.nodeId());
    assertThat(info.getAccessibleTopology().getSegmentsMap()).containsEntry("caravan.csi/node", f.backend.nodeId());
    assertThat(f.node.nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance()).getCapabilitiesList())
        .extracting(c -> c.getRpc().getType())
        .contains(NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME, NodeServiceCapability.RPC.Type.GET_VOLUME_STATS,
            NodeServiceCapability.RPC.Type.EXPAND_VOLUME, NodeServiceCapability.RPC.Type.VOLUME_CONDITION);
  }
}
