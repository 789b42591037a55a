package dev.caravan.csi.backend.local;

import static dev.caravan.csi.GrpcOutcomes.code;
import static dev.caravan.csi.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.server.CsiServer;
import dev.caravan.csi.service.IdentityService;
import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.GetCapacityRequest;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.NodeExpandVolumeRequest;
import dev.caravan.csi.v1.NodeGetInfoRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.Snapshot;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeCapability.AccessMode.Mode;
import dev.caravan.csi.v1.VolumeContentSource;
import dev.caravan.storage.mount.MountTable;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The {@code local} backend against real OpenZFS, over gRPC on a real unix socket: run inside the
 * guest of {@code scripts/guest-test} (which sets {@code CARAVAN_GUEST=1} and creates the pool named
 * by {@code CARAVAN_TEST_POOL}); skipped elsewhere. Each run works below its own parent dataset
 * {@code <pool>/ct-<run>}, which only this class creates and, at the end, removes. The {@code zfs}
 * command appears here only as an independent oracle and to make a foreign (unmanaged) zvol.
 */
class LocalGuestTest {
  static final String POOL = System.getenv().getOrDefault("CARAVAN_TEST_POOL", "caravan-test");
  static final String NODE = "guest-node";
  static final long MIB = 1L << 20;
  static final String PARENT = "ct-" + Long.toString(System.nanoTime() % 1_000_000_000L, 36);

  private Path work;
  private Plugin plugin;
  private UnixChannel channel;
  private IdentityGrpc.IdentityBlockingStub identity;
  private ControllerGrpc.ControllerBlockingStub controller;
  private NodeGrpc.NodeBlockingStub node;
  private final List<Process> processes = new ArrayList<>();

  @BeforeAll
  static void requireZfs() {
    assumeTrue("1".equals(System.getenv("CARAVAN_GUEST")) && Files.exists(Path.of("/dev/zfs")),
        "needs real ZFS: run scripts/guest-test");
  }

  @AfterAll
  static void removeRunDataset() {
    if ("1".equals(System.getenv("CARAVAN_GUEST")) && Files.exists(Path.of("/dev/zfs"))) {
      run("zfs", "destroy", "-r", POOL + "/" + PARENT);
    }
  }

  @BeforeEach
  void setUp() throws IOException {
    work = Files.createTempDirectory("caravan-local-");
  }

  @AfterEach
  void tearDown() throws IOException, InterruptedException {
    disconnect();
    if (plugin != null) {
      plugin.shutdown(Duration.ofSeconds(2));
    }
    for (Process p : processes) {
      p.destroyForcibly();
      p.waitFor(20, TimeUnit.SECONDS);
    }
    List<Path> leaked = MountTable.read().stream().map(m -> m.mountPoint()).filter(m -> m.startsWith(work))
        .sorted(Comparator.comparing(Path::getNameCount).reversed()).toList();
    for (Path m : leaked) {
      run("umount", m.toString());
    }
    if (leaked.isEmpty()) {
      try (Stream<Path> paths = Files.walk(work)) {
        for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
    assertThat(leaked).as("mounts the test left behind (now unmounted)").isEmpty();
  }

  private Map<String, String> options() {
    return Map.of("pools", POOL, "parent-dataset", PARENT, "device-wait-seconds", "60");
  }

  private void startInProcess() throws IOException {
    Path data = work.resolve("data");
    plugin = Plugin.start(new Plugin.Settings("local", work.resolve("csi.sock"), NODE, data, data.resolve("node"),
        IdentityService.defaultName("local"), 0, options()).withAllowedRoots(List.of(work)));
    connect();
  }

  private void connect() {
    channel = new UnixChannel(work.resolve("csi.sock"));
    identity = IdentityGrpc.newBlockingStub(channel.channel());
    controller = ControllerGrpc.newBlockingStub(channel.channel());
    node = NodeGrpc.newBlockingStub(channel.channel());
  }

  private void disconnect() {
    if (channel != null) {
      channel.close();
      channel = null;
    }
  }

  // ---- the whole lifecycle -----------------------------------------------------------------------

  @Test
  void lifecycleCreateStagePublishSnapshotCloneExpandTeardown() throws Exception {
    startInProcess();
    assertThat(identity.probe(ProbeRequest.getDefaultInstance()).getReady().getValue()).isTrue();
    assertThat(node.nodeGetInfo(NodeGetInfoRequest.getDefaultInstance()).getAccessibleTopology().getSegmentsMap())
        .containsEntry("caravan.csi/node", NODE);
    VolumeCapability cap = mount("ext4");

    Volume src = createVolume("lifecycle-src", 64 * MIB, cap, Map.of("volblocksize", "16K"));
    assertThat(src.getVolumeId()).startsWith("local/v1/" + NODE + "/" + POOL + "/" + PARENT + "/vol-lifecycle-src-");
    assertThat(src.getCapacityBytes()).isEqualTo(64 * MIB);
    assertThat(src.getVolumeContextMap()).containsEntry("fsType", "ext4").containsEntry("node", NODE);
    assertThat(src.getAccessibleTopology(0).getSegmentsMap()).containsEntry("caravan.csi/node", NODE);
    String srcDataset = src.getVolumeContextMap().get("dataset");
    assertThat(zfsGet("caravan:managed", srcDataset)).isEqualTo("true");
    assertThat(zfsGet("caravan:csi-name", srcDataset)).isEqualTo("lifecycle-src");
    assertThat(zfsGet("volblocksize", srcDataset)).isEqualTo("16384");
    assertThat(Long.parseLong(zfsGet("refreservation", srcDataset))).as("thick by default").isGreaterThanOrEqualTo(64 * MIB);
    // idempotent by name; incompatible repeat refused
    assertThat(createVolume("lifecycle-src", 64 * MIB, cap, Map.of()).getVolumeId()).isEqualTo(src.getVolumeId());
    assertThat(code(() -> createVolume("lifecycle-src", 128 * MIB, cap, Map.of()))).isEqualTo(Code.ALREADY_EXISTS);
    // sizes round up to the volblocksize
    Volume odd = createVolume("lifecycle-odd", 20 * MIB + 1, block(), Map.of("volblocksize", "64K", "sparse", "true"));
    assertThat(odd.getCapacityBytes()).isEqualTo(20 * MIB + 64 * 1024);
    assertThat(zfsGet("refreservation", odd.getVolumeContextMap().get("dataset"))).isIn("0", "none");

    Path staging = dir("staging/src");
    Path target = dir("per-alloc/a").resolve("src");
    stage(src.getVolumeId(), staging, cap);
    publish(src.getVolumeId(), staging, target, cap);
    byte[] payload = new byte[3 * (int) MIB];
    new Random(42).nextBytes(payload);
    Files.write(target.resolve("data.bin"), payload);
    Files.writeString(target.resolve("hello.txt"), "written before the snapshot");

    // snapshot while staged: frozen around lzc_snapshot, thawed after (writes work again)
    Snapshot snap = controller.createSnapshot(CreateSnapshotRequest.newBuilder().setName("lifecycle-snap")
        .setSourceVolumeId(src.getVolumeId()).build()).getSnapshot();
    assertThat(snap.getSnapshotId()).startsWith(src.getVolumeId() + "@snap-lifecycle-snap-");
    assertThat(snap.getReadyToUse()).isTrue();
    assertThat(snap.getSizeBytes()).isEqualTo(64 * MIB);
    Files.writeString(target.resolve("after.txt"), "written after the snapshot");
    assertThat(controller.createSnapshot(CreateSnapshotRequest.newBuilder().setName("lifecycle-snap")
        .setSourceVolumeId(src.getVolumeId()).build()).getSnapshot().getSnapshotId()).isEqualTo(snap.getSnapshotId());
    assertThat(controller.listSnapshots(ListSnapshotsRequest.newBuilder().setSourceVolumeId(src.getVolumeId()).build())
        .getEntriesList()).extracting(e -> e.getSnapshot().getSnapshotId()).containsExactly(snap.getSnapshotId());

    // refusals while the snapshot exists / while staged
    var withSnapshots = error(() -> controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(src.getVolumeId()).build()));
    assertThat(withSnapshots.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(withSnapshots.getStatus().getDescription()).contains("has snapshots").contains(snap.getSnapshotId());

    // clone from the snapshot (bigger) and from the live volume
    Volume fromSnap = controller.createVolume(CreateVolumeRequest.newBuilder().setName("lifecycle-clone")
        .addVolumeCapabilities(cap).setCapacityRange(bytes(96 * MIB))
        .setVolumeContentSource(VolumeContentSource.newBuilder()
            .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snap.getSnapshotId())))
        .build()).getVolume();
    assertThat(fromSnap.getCapacityBytes()).isEqualTo(96 * MIB);
    assertThat(fromSnap.getContentSource().getSnapshot().getSnapshotId()).isEqualTo(snap.getSnapshotId());
    Volume fromVol = controller.createVolume(CreateVolumeRequest.newBuilder().setName("lifecycle-copy")
        .addVolumeCapabilities(cap)
        .setVolumeContentSource(VolumeContentSource.newBuilder()
            .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(src.getVolumeId())))
        .build()).getVolume();
    assertThat(fromVol.getCapacityBytes()).isEqualTo(64 * MIB);
    assertThat(run("zfs", "list", "-H", "-t", "snapshot", "-o", "name", "-r", srcDataset))
        .as("the temporary clone snapshot is gone").doesNotContain("@clone-");

    // the source goes away entirely: snapshot, then volume
    unpublish(src.getVolumeId(), target);
    unstage(src.getVolumeId(), staging);
    controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snap.getSnapshotId()).build());
    controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snap.getSnapshotId()).build());
    controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(src.getVolumeId()).build());
    controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(src.getVolumeId()).build());
    assertThat(run("zfs", "list", "-H", "-o", "name", srcDataset)).as("source destroyed").isEmpty();

    // the clones are independent and carry the data: snapshot clone has no "after", volume copy has it
    Path cloneStaging = dir("staging/clone");
    Path cloneTarget = dir("per-alloc/b").resolve("clone");
    stage(fromSnap.getVolumeId(), cloneStaging, cap);
    publish(fromSnap.getVolumeId(), cloneStaging, cloneTarget, cap);
    assertThat(Files.readAllBytes(cloneTarget.resolve("data.bin"))).isEqualTo(payload);
    assertThat(Files.readString(cloneTarget.resolve("hello.txt"))).isEqualTo("written before the snapshot");
    assertThat(Files.exists(cloneTarget.resolve("after.txt"))).isFalse();
    assertThat(zfsGet("origin", fromSnap.getVolumeContextMap().get("dataset"))).isEqualTo("-");
    Path copyStaging = dir("staging/copy");
    stage(fromVol.getVolumeId(), copyStaging, cap);
    assertThat(Files.readString(copyStaging.resolve("after.txt"))).isEqualTo("written after the snapshot");
    assertThat(Files.readAllBytes(copyStaging.resolve("data.bin"))).isEqualTo(payload);
    unstage(fromVol.getVolumeId(), copyStaging);

    // expand: the clone staged and published grows, seen by statvfs (ext4 grown at stage when needed)
    long before = Files.getFileStore(cloneTarget).getTotalSpace();
    var expanded = controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(fromSnap.getVolumeId()).setCapacityRange(bytes(192 * MIB)).setVolumeCapability(cap).build());
    assertThat(expanded.getCapacityBytes()).isEqualTo(192 * MIB);
    assertThat(expanded.getNodeExpansionRequired()).isTrue();
    assertThat(zfsGet("volsize", fromSnap.getVolumeContextMap().get("dataset"))).isEqualTo(Long.toString(192 * MIB));
    boolean online = hasCapSysResource();
    if (online) {
      node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(fromSnap.getVolumeId())
          .setVolumePath(cloneTarget.toString()).setStagingTargetPath(cloneStaging.toString())
          .setCapacityRange(bytes(192 * MIB)).setVolumeCapability(cap).build());
    } else {
      // no CAP_SYS_RESOURCE for an online ext4 resize: restage, which grows ext4 unmounted
      unpublish(fromSnap.getVolumeId(), cloneTarget);
      unstage(fromSnap.getVolumeId(), cloneStaging);
      stage(fromSnap.getVolumeId(), cloneStaging, cap);
      publish(fromSnap.getVolumeId(), cloneStaging, cloneTarget, cap);
    }
    long after = Files.getFileStore(cloneTarget).getTotalSpace();
    assertThat(after).as("statvfs total after expansion (online=%s)", online).isGreaterThan(before + 64 * MIB);
    var stats = node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(fromSnap.getVolumeId())
        .setVolumePath(cloneTarget.toString()).build());
    assertThat(stats.getVolumeCondition().getAbnormal()).isFalse();
    var status = controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder()
        .setVolumeId(fromSnap.getVolumeId()).build());
    assertThat(status.getStatus().getPublishedNodeIdsList()).containsExactly(NODE);
    assertThat(controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
        .extracting(e -> e.getVolume().getVolumeId())
        .containsExactlyInAnyOrder(fromSnap.getVolumeId(), fromVol.getVolumeId(), odd.getVolumeId());

    // teardown
    unpublish(fromSnap.getVolumeId(), cloneTarget);
    unstage(fromSnap.getVolumeId(), cloneStaging);
    for (Volume v : List.of(fromSnap, fromVol, odd)) {
      controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    }
    assertThat(controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesCount()).isZero();
    assertThat(run("zfs", "list", "-H", "-o", "name", "-r", "-t", "all", POOL + "/" + PARENT).lines().toList())
        .containsExactly(POOL + "/" + PARENT);
  }

  // ---- refusals ----------------------------------------------------------------------------------

  @Test
  void refusalsLeaveEverythingAsItWas() throws Exception {
    startInProcess();
    VolumeCapability cap = mount("ext4");
    Volume v = createVolume("refusals", 32 * MIB, cap, Map.of());
    String dataset = v.getVolumeContextMap().get("dataset");

    // shrink: a limit below the size is refused, a smaller required size changes nothing
    assertThat(code(() -> controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).setCapacityRange(CapacityRange.newBuilder().setLimitBytes(16 * MIB)).build())))
        .isEqualTo(Code.OUT_OF_RANGE);
    assertThat(controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).setCapacityRange(bytes(16 * MIB)).build()).getCapacityBytes()).isEqualTo(32 * MIB);
    assertThat(zfsGet("volsize", dataset)).isEqualTo(Long.toString(32 * MIB));

    // unknown parameter, pool outside the allowlist, another node
    var unknown = error(() -> createVolume("bad", 32 * MIB, cap, Map.of("poool", POOL)));
    assertThat(unknown.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(unknown.getStatus().getDescription()).contains("[poool]")
        .contains("[compression, fsType, host, pool, sparse, volblocksize]");
    assertThat(error(() -> createVolume("bad", 32 * MIB, cap, Map.of("pool", "rpool"))).getStatus().getDescription())
        .contains("parameters.pool 'rpool' is not an allowed pool");
    var elsewhere = error(() -> createVolume("bad", 32 * MIB, cap, Map.of("host", "other-node")));
    assertThat(elsewhere.getStatus().getCode()).isEqualTo(Code.UNAVAILABLE);
    assertThat(elsewhere.getStatus().getDescription()).contains("other-node");
    String foreign = v.getVolumeId().replace("/" + NODE + "/", "/other-node/");
    var owned = error(() -> controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(foreign).build()));
    assertThat(owned.getStatus().getCode()).isEqualTo(Code.UNAVAILABLE);
    assertThat(owned.getStatus().getDescription()).contains("node other-node");
    // an id this backend never issues names nothing: deleting it is done, and touches nothing
    assertThat(code(() -> controller.deleteVolume(DeleteVolumeRequest.newBuilder()
        .setVolumeId("local/v1/" + NODE + "/" + POOL + "/" + PARENT + "/../vol-x").build()))).isEqualTo(Code.OK);
    assertThat(run("zfs", "list", "-H", "-o", "name", "-r", POOL + "/" + PARENT).lines().toList())
        .containsExactly(POOL + "/" + PARENT, dataset);

    // a zvol Caravan did not create, with a name like ours, is never destroyed or modified
    String foreignName = "vol-foreign-0123456789ab";
    String foreignDataset = POOL + "/" + PARENT + "/" + foreignName;
    run("zfs", "create", "-V", "16M", foreignDataset);
    String foreignId = "local/v1/" + NODE + "/" + foreignDataset;
    var unmanaged = error(() -> controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(foreignId).build()));
    assertThat(unmanaged.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(unmanaged.getStatus().getDescription()).contains("not created by Caravan");
    assertThat(code(() -> controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(foreignId).setCapacityRange(bytes(32 * MIB)).build()))).isEqualTo(Code.NOT_FOUND);
    assertThat(code(() -> controller.createSnapshot(CreateSnapshotRequest.newBuilder().setName("foreign-snap")
        .setSourceVolumeId(foreignId).build()))).isEqualTo(Code.NOT_FOUND);
    assertThat(code(() -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(foreignId)
        .setStagingTargetPath(dir("staging/foreign").toString()).setVolumeCapability(cap).build())))
        .isEqualTo(Code.NOT_FOUND);
    assertThat(controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
        .extracting(e -> e.getVolume().getVolumeId()).containsExactly(v.getVolumeId());
    assertThat(zfsGet("volsize", foreignDataset)).isEqualTo(Long.toString(16 * MIB));
    assertThat(run("zfs", "list", "-H", "-t", "snapshot", "-o", "name", "-r", foreignDataset)).isEmpty();
    run("zfs", "destroy", foreignDataset);

    // capacity reflects the pool, less nothing (no reserve configured)
    long available = controller.getCapacity(GetCapacityRequest.getDefaultInstance()).getAvailableCapacity();
    assertThat(available).isPositive().isLessThanOrEqualTo(Long.parseLong(zfsGet("available", POOL)));

    controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
  }

  // ---- kill -9 with a staged zvol ------------------------------------------------------------------

  @Test
  void killDashNineWithAStagedZvolAndANewProcessFinishesTheJob() throws Exception {
    VolumeCapability cap = mount("ext4");
    Process first = serve();
    Volume v = createVolume("survivor", 32 * MIB, cap, Map.of());
    Path staging = dir("staging/survivor");
    Path target = dir("per-alloc/c").resolve("survivor");
    stage(v.getVolumeId(), staging, cap);
    publish(v.getVolumeId(), staging, target, cap);
    Files.writeString(target.resolve("before-crash.txt"), "durable");

    disconnect();
    first.destroyForcibly(); // SIGKILL
    assertThat(first.waitFor(20, TimeUnit.SECONDS)).isTrue();
    assertThat(first.exitValue()).isEqualTo(137);
    assertThat(MountTable.isMountPoint(staging)).isTrue();
    assertThat(MountTable.isMountPoint(target)).isTrue();

    serve();
    var stats = node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setVolumePath(target.toString()).build());
    assertThat(stats.getVolumeCondition().getAbnormal()).isFalse();
    assertThat(Files.readString(target.resolve("before-crash.txt"))).isEqualTo("durable");
    assertThat(code(() -> controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build())))
        .as("in use").isEqualTo(Code.FAILED_PRECONDITION);
    unpublish(v.getVolumeId(), target);
    unstage(v.getVolumeId(), staging);
    controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    assertThat(run("zfs", "list", "-H", "-o", "name", "-r", POOL + "/" + PARENT).lines().toList())
        .containsExactly(POOL + "/" + PARENT);
  }

  private Process serve() throws IOException, InterruptedException {
    Path config = work.resolve("caravan.properties");
    StringBuilder text = new StringBuilder();
    options().forEach((k, val) -> text.append("local.").append(k).append('=').append(val).append('\n'));
    Files.writeString(config, text);
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Path socket = work.resolve("csi.sock");
    Path log = work.resolve("plugin-" + processes.size() + ".log");
    Process p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED", "-XX:TieredStopAtLevel=1",
        "-cp", classPath(), "dev.caravan.csi.cli.Main", "serve",
        "--driver=local", "--endpoint", "unix://" + socket, "--node-id", NODE,
        "--data-dir", work.resolve("data").toString(), "--config", config.toString(),
        "--allowed-root", work.toString())
        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    processes.add(p);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(240);
    while (!CsiServer.isLive(socket)) {
      if (!p.isAlive() || System.nanoTime() > deadline) {
        throw new AssertionError("plugin did not come up: " + Files.readString(log));
      }
      Thread.sleep(100);
    }
    connect();
    return p;
  }

  /**
   * The class path of this test run: the JUnit console launcher (as the guest runs it) loads the
   * tests through its own URLClassLoader, so {@code java.class.path} alone lacks them.
   */
  static String classPath() {
    List<String> entries = new ArrayList<>();
    if (Thread.currentThread().getContextClassLoader() instanceof java.net.URLClassLoader loader) {
      for (java.net.URL url : loader.getURLs()) {
        try {
          entries.add(Path.of(url.toURI()).toString());
        } catch (java.net.URISyntaxException e) {
          throw new AssertionError(e);
        }
      }
    }
    entries.add(System.getProperty("java.class.path"));
    return String.join(java.io.File.pathSeparator, entries);
  }

  // ---- helpers -----------------------------------------------------------------------------------

  private Volume createVolume(String name, long bytes, VolumeCapability cap, Map<String, String> params) {
    return controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(bytes(bytes)).putAllParameters(params).build()).getVolume();
  }

  private void stage(String id, Path staging, VolumeCapability cap) {
    node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setVolumeCapability(cap).build());
  }

  private void publish(String id, Path staging, Path target, VolumeCapability cap) {
    node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setTargetPath(target.toString()).setVolumeCapability(cap).build());
  }

  private void unpublish(String id, Path target) {
    node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString()).build());
  }

  private void unstage(String id, Path staging) {
    node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString()).build());
  }

  private Path dir(String relative) throws IOException {
    return Files.createDirectories(work.resolve(relative));
  }

  static VolumeCapability mount(String fs) {
    return VolumeCapability.newBuilder().setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fs))
        .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(Mode.SINGLE_NODE_WRITER)).build();
  }

  static VolumeCapability block() {
    return VolumeCapability.newBuilder().setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
        .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(Mode.SINGLE_NODE_WRITER)).build();
  }

  static CapacityRange bytes(long required) {
    return CapacityRange.newBuilder().setRequiredBytes(required).build();
  }

  static String zfsGet(String property, String dataset) {
    return run("zfs", "get", "-Hp", "-o", "value", property, dataset);
  }

  /** Runs a fixture command and returns its output; a failing {@code zfs list} yields "". */
  static String run(String... command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(false).start();
      p.getOutputStream().close();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8).strip();
      assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
      if (p.exitValue() != 0) {
        if (command[0].equals("zfs") && command[1].equals("list")) {
          return "";
        }
        throw new AssertionError(String.join(" ", command) + " failed: " + err);
      }
      return out;
    } catch (IOException e) {
      throw new AssertionError(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  static boolean hasCapSysResource() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("CapEff:")) {
        return (Long.parseUnsignedLong(line.substring(7).trim(), 16) & (1L << 24)) != 0;
      }
    }
    return false;
  }
}
