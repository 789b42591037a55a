package dev.caravan.csi.scenario.fuzz;

import dev.caravan.csi.scenario.Caps;
import dev.caravan.csi.scenario.PluginFixture;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * What the fuzz's bad requests aim at: real volumes in every state (staged and published for mount
 * and for block access, idle with a snapshot), decoys outside the plugin's directories (an empty
 * directory and an empty file a careless plugin would delete, symlinks from inside its mount root to
 * them and to /etc), paths into /proc, /etc and the plugin's own data directory, and paths that do
 * not exist and must not come to exist.
 */
final class FuzzWorld {
  /** A real volume and where it is staged and published (null paths: neither). */
  record Real(String id, String name, long bytes, VolumeCapability cap, Path staging, Path target) {}

  final PluginFixture f;
  final Real mounted;
  final Real block;
  final Real idle;
  final String snapshotId;
  final String snapshotName;
  final Path decoy;
  /** Absolute paths outside the plugin's mount root (or leading out of it through a symlink). */
  final List<String> outside;
  /** Paths that did not exist when the fuzz started and must not exist after any request. */
  final List<Path> mustStayAbsent;

  private FuzzWorld(PluginFixture f, Real mounted, Real block, Real idle, String snapshotId, String snapshotName,
      Path decoy, List<String> outside, List<Path> mustStayAbsent) {
    this.f = f;
    this.mounted = mounted;
    this.block = block;
    this.idle = idle;
    this.snapshotId = snapshotId;
    this.snapshotName = snapshotName;
    this.decoy = decoy;
    this.outside = outside;
    this.mustStayAbsent = mustStayAbsent;
  }

  static FuzzWorld build(PluginFixture f, long seed) throws IOException {
    VolumeCapability mountCap = Caps.mount("ext4");
    long mountBytes = f.backend.sizeFor("ext4");
    Real mounted = new Real(create(f, "fuzz-mount", mountCap, mountBytes), "fuzz-mount", mountBytes, mountCap,
        f.dir("staging/default/fuzz-mount/rw-file-system-single-node-writer"),
        f.dir("per-alloc/f1/fuzz-mount").resolve("rw-file-system-single-node-writer"));
    VolumeCapability blockCap = Caps.block();
    Real block = new Real(create(f, "fuzz-block", blockCap, 32 * Caps.MIB), "fuzz-block", 32 * Caps.MIB, blockCap,
        f.dir("staging/default/fuzz-block/rw-block-device-single-node-writer"),
        f.dir("per-alloc/f2/fuzz-block").resolve("rw-block-device-single-node-writer"));
    Real idle = new Real(create(f, "fuzz-idle", mountCap, 32 * Caps.MIB), "fuzz-idle", 32 * Caps.MIB, mountCap, null, null);
    for (Real r : List.of(mounted, block)) {
      f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(r.id())
          .setStagingTargetPath(r.staging().toString()).setVolumeCapability(r.cap()).build());
      f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(r.id())
          .setStagingTargetPath(r.staging().toString()).setTargetPath(r.target().toString())
          .setVolumeCapability(r.cap()).build());
    }
    String snapshotName = "fuzz-snap";
    String snapshotId = f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setName(snapshotName)
        .setSourceVolumeId(idle.id()).build()).getSnapshot().getSnapshotId();

    Path decoy = Files.createTempDirectory("caravan-fuzz-decoy-");
    Files.createDirectories(decoy.resolve("empty"));
    Files.createFile(decoy.resolve("empty-file"));
    Files.createDirectories(decoy.resolve("full"));
    Files.writeString(decoy.resolve("full/keep"), "keep me");
    Path evil = f.dir("per-alloc/evil");
    Files.createSymbolicLink(evil.resolve("link-dir"), decoy.resolve("empty"));
    Files.createSymbolicLink(evil.resolve("link-file"), decoy.resolve("empty-file"));
    Files.createSymbolicLink(evil.resolve("link-etc"), Path.of("/etc"));
    Files.createSymbolicLink(evil.resolve("link-parent"), decoy);
    Path absentInEtc = Path.of("/etc/caravan-fuzz-absent-" + Long.toHexString(seed));
    Path absentInDecoy = decoy.resolve("absent");
    Path absentInProc = Path.of("/proc/caravan-fuzz-absent");
    List<Path> mustStayAbsent = List.of(absentInEtc, absentInDecoy, absentInProc);
    for (Path p : mustStayAbsent) {
      if (Files.exists(p)) {
        throw new IllegalStateException(p + " exists before the fuzz started; remove it");
      }
    }
    List<String> outside = Stream.of(
            Path.of("/etc"), Path.of("/etc/ssl"), Path.of("/etc/hostname"), absentInEtc.resolve("x"),
            Path.of("/proc"), Path.of("/proc/self/root"), Path.of("/proc/sys/kernel"), Path.of("/proc/self/status"),
            absentInProc.resolve("x"), Path.of("/dev"), Path.of("/dev/null"), Path.of("/sys/kernel"), Path.of("/tmp"),
            f.data, f.data.resolve("node"), f.data.resolve("volumes"), f.work,
            decoy, decoy.resolve("empty"), decoy.resolve("empty-file"), decoy.resolve("full"), decoy.resolve("full/keep"),
            absentInDecoy.resolve("x"),
            evil.resolve("link-dir"), evil.resolve("link-file"), evil.resolve("link-etc"),
            evil.resolve("link-etc/caravan-fuzz-absent-" + Long.toHexString(seed)),
            evil.resolve("link-parent/empty"), evil.resolve("link-parent/absent/x"))
        .map(Path::toString).toList();
    return new FuzzWorld(f, mounted, block, idle, snapshotId, snapshotName, decoy, outside, mustStayAbsent);
  }

  private static String create(PluginFixture f, String name, VolumeCapability cap, long bytes) {
    return f.controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(bytes)).build()).getVolume().getVolumeId();
  }

  /** A well-formed id of a volume that does not exist (the backend's, with a random hash). */
  String absentVolumeId(String hex12) {
    return f.backend.absentVolumeId(f.work).replace("0123456789ab", hex12);
  }

  String absentSnapshotId(String hex12) {
    return f.backend.absentSnapshotId(f.work).replace("0123456789ab", hex12);
  }

  /**
   * Undoes {@link #build}: unpublishes, unstages and deletes the real volumes, removes the decoys.
   * Every step is tried even when one fails (a fuzz finding may have left the plugin in a bad state);
   * the first failure is rethrown at the end.
   */
  void tearDown() throws IOException {
    List<org.junit.jupiter.api.function.Executable> steps = new java.util.ArrayList<>();
    for (Real r : List.of(mounted, block)) {
      steps.add(() -> f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(r.id())
          .setTargetPath(r.target().toString()).build()));
      steps.add(() -> f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(r.id())
          .setStagingTargetPath(r.staging().toString()).build()));
    }
    steps.add(() -> f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snapshotId).build()));
    for (Real r : List.of(mounted, block, idle)) {
      steps.add(() -> f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(r.id()).build()));
    }
    steps.add(this::removeDecoys);
    Throwable first = null;
    for (var step : steps) {
      try {
        step.execute();
      } catch (Throwable t) {
        if (first == null) {
          first = t;
        } else {
          first.addSuppressed(t);
        }
      }
    }
    if (first != null) {
      throw new IOException("the fuzz's volumes could not all be removed", first);
    }
  }

  /** Removes the decoy tree and anything that came to exist where nothing should. */
  void removeDecoys() throws IOException {
    for (Path p : mustStayAbsent) {
      deleteTree(p);
    }
    deleteTree(decoy);
  }

  private static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
      return;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
