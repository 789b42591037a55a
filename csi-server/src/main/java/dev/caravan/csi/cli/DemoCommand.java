package dev.caravan.csi.cli;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.NodeExpandVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsResponse;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeContentSource;
import dev.caravan.csi.v1.VolumeUsage;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Comparator;
import java.util.Deque;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code caravan demo}: a full volume lifecycle against an in-process plugin on a temporary socket,
 * over real gRPC, on the file backend in a temporary data directory, with Nomad's path layout. Prints
 * each step with its latency and leaves nothing behind (teardown runs even after a failure).
 */
@Command(name = "demo", description = "Run a full volume lifecycle on the file backend and clean up.")
final class DemoCommand implements Callable<Integer> {
  private static final long MIB = 1L << 20;

  // xfs by default: growing a mounted xfs needs only CAP_SYS_ADMIN, ext4 also needs CAP_SYS_RESOURCE,
  // which some containers drop.
  @Option(names = "--fs-type", description = "xfs or ext4 (default: xfs).")
  String fsType = "xfs";

  @Option(names = "--verbose", description = "Also print the plugin's own log (one line per RPC).")
  boolean verbose;

  // Held so the level set on it is not lost to garbage collection (JUL keeps loggers weakly).
  private static final java.util.logging.Logger PLUGIN_LOG = java.util.logging.Logger.getLogger("dev.caravan");

  private final Deque<Runnable> teardown = new ArrayDeque<>();

  @Override
  public Integer call() throws IOException {
    if (!"root".equals(System.getProperty("user.name")) || !Files.exists(Path.of("/dev/loop-control"))) {
      System.err.println("caravan demo needs root and loop devices (/dev/loop-control): it attaches a loop device and mounts it");
      return 1;
    }
    if (!verbose) {
      // The steps below already say what happened and how long it took; warnings still show.
      PLUGIN_LOG.setLevel(java.util.logging.Level.WARNING);
    }
    Path work = Files.createTempDirectory("caravan-demo-");
    Path socket = work.resolve("csi.sock");
    Path data = work.resolve("data");
    Path root = work.resolve("nomad/csi/monolith/caravan");
    String alloc = UUID.randomUUID().toString();
    long size = "xfs".equals(fsType) ? 320 * MIB : 64 * MIB;
    System.out.printf("caravan demo: file backend in %s, fs %s%n%n", work, fsType);
    int status = 0;
    try (Plugin plugin = Plugin.start(Plugin.Settings.of("file", socket, "demo-node", data)
            .withAllowedRoots(List.of(root)));
        UnixChannel ch = new UnixChannel(socket)) {
      var identity = IdentityGrpc.newBlockingStub(ch.channel());
      var controller = ControllerGrpc.newBlockingStub(ch.channel());
      var node = NodeGrpc.newBlockingStub(ch.channel());
      VolumeCapability cap = VolumeCapability.newBuilder()
          .setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fsType))
          .setAccessMode(VolumeCapability.AccessMode.newBuilder()
              .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
          .build();
      String usage = "rw-file-system-single-node-writer";
      try {
        step("probe", () -> "ready=" + identity.probe(ProbeRequest.getDefaultInstance()).getReady().getValue());
        String vol = timed("create volume", () -> controller.createVolume(CreateVolumeRequest.newBuilder()
            .setName("caravan-demo").addVolumeCapabilities(cap)
            .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(size)).build()).getVolume().getVolumeId());
        teardown.push(() -> controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(vol).build()));
        Path staging = dir(root.resolve("staging/default/" + vol + "/" + usage));
        Path target = root.resolve("per-alloc/" + alloc + "/" + vol + "/" + usage);
        stagePublish(node, vol, cap, staging, target, "");
        step("write and read back", () -> {
          String text = "hello from caravan " + alloc + "\n";
          Files.writeString(target.resolve("hello.txt"), text, StandardCharsets.UTF_8);
          String back = Files.readString(target.resolve("hello.txt"), StandardCharsets.UTF_8);
          if (!back.equals(text)) {
            throw new IllegalStateException("read back different data");
          }
          return text.length() + " bytes";
        });
        step("stats", () -> usage(node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
            .setVolumeId(vol).setVolumePath(target.toString()).build())));
        String snap = timed("snapshot", () -> controller.createSnapshot(CreateSnapshotRequest.newBuilder()
            .setSourceVolumeId(vol).setName("caravan-demo-snap").build()).getSnapshot().getSnapshotId());
        teardown.push(() -> controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snap).build()));
        String clone = timed("clone from snapshot", () -> controller.createVolume(CreateVolumeRequest.newBuilder()
            .setName("caravan-demo-clone").addVolumeCapabilities(cap)
            .setVolumeContentSource(VolumeContentSource.newBuilder()
                .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snap))).build())
            .getVolume().getVolumeId());
        teardown.push(() -> controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(clone).build()));
        Path cloneStaging = dir(root.resolve("staging/default/" + clone + "/" + usage));
        Path cloneTarget = root.resolve("per-alloc/" + alloc + "/" + clone + "/" + usage);
        stagePublish(node, clone, cap, cloneStaging, cloneTarget, "clone: ");
        step("clone: read data", () -> {
          String a = Files.readString(target.resolve("hello.txt"), StandardCharsets.UTF_8);
          String b = Files.readString(cloneTarget.resolve("hello.txt"), StandardCharsets.UTF_8);
          if (!a.equals(b)) {
            throw new IllegalStateException("clone content differs");
          }
          return "same content as the source";
        });
        long bigger = size * 2;
        step("expand (controller)", () -> "capacity " + controller.controllerExpandVolume(
            ControllerExpandVolumeRequest.newBuilder().setVolumeId(vol)
                .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(bigger)).build()).getCapacityBytes() / MIB + " MiB");
        step("expand (node)", () -> "device " + node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder()
            .setVolumeId(vol).setVolumePath(target.toString()).setStagingTargetPath(staging.toString()).build())
            .getCapacityBytes() / MIB + " MiB");
        step("stats after expand", () -> usage(node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
            .setVolumeId(vol).setVolumePath(target.toString()).build())));
      } catch (RuntimeException e) {
        System.out.println("  FAILED: " + e.getMessage());
        status = 1;
      } finally {
        System.out.println();
        while (!teardown.isEmpty()) {
          try {
            Runnable r = teardown.pop();
            r.run();
          } catch (RuntimeException e) {
            System.out.println("  teardown step failed: " + e.getMessage());
            status = 1;
          }
        }
      }
      plugin.shutdown(Duration.ofSeconds(2));
    } finally {
      deleteTree(work);
    }
    System.out.println(status == 0 ? "demo complete; nothing left behind" : "demo FAILED");
    return status;
  }

  private void stagePublish(NodeGrpc.NodeBlockingStub node, String vol, VolumeCapability cap, Path staging,
      Path target, String label) {
    step(label + "stage", () -> {
      node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(vol)
          .setStagingTargetPath(staging.toString()).setVolumeCapability(cap).build());
      return "attached, formatted if empty, mounted at " + staging;
    });
    teardown.push(() -> timedQuiet(label + "unstage", () -> node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder()
        .setVolumeId(vol).setStagingTargetPath(staging.toString()).build())));
    dir(target.getParent());
    step(label + "publish", () -> {
      node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(vol)
          .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).setVolumeCapability(cap).build());
      return "bind-mounted at " + target;
    });
    teardown.push(() -> timedQuiet(label + "unpublish", () -> node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder()
        .setVolumeId(vol).setTargetPath(target.toString()).build())));
  }

  interface Step {
    String run() throws Exception;
  }

  private static void step(String name, Step body) {
    long start = System.nanoTime();
    String detail;
    try {
      detail = body.run();
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException(name + ": " + e.getMessage(), e);
    }
    print(name, start, detail);
  }

  private static <T> T timed(String name, java.util.function.Supplier<T> body) {
    long start = System.nanoTime();
    T value = body.get();
    print(name, start, String.valueOf(value));
    return value;
  }

  private static void timedQuiet(String name, Runnable body) {
    long start = System.nanoTime();
    body.run();
    print(name, start, "");
  }

  private static void print(String name, long start, String detail) {
    double ms = (System.nanoTime() - start) / 1e6;
    System.out.printf(Locale.ROOT, "  %-24s %9.2f ms  %s%n", name, ms, detail);
  }

  private static String usage(NodeGetVolumeStatsResponse r) {
    StringBuilder b = new StringBuilder();
    for (VolumeUsage u : r.getUsageList()) {
      if (u.getUnit() == VolumeUsage.Unit.BYTES) {
        b.append(String.format(Locale.ROOT, "%d MiB total, %d KiB used", u.getTotal() / MIB, u.getUsed() / 1024));
      } else if (u.getUnit() == VolumeUsage.Unit.INODES) {
        b.append(String.format(Locale.ROOT, ", %d/%d inodes", u.getUsed(), u.getTotal()));
      }
    }
    b.append(r.getVolumeCondition().getAbnormal() ? ", ABNORMAL: " + r.getVolumeCondition().getMessage() : ", healthy");
    return b.toString();
  }

  private static Path dir(Path p) {
    try {
      return Files.createDirectories(p);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static void deleteTree(Path root) throws IOException {
    if (!Files.exists(root)) {
      return;
    }
    var stillMounted = MountTable.read().stream().map(MountEntry::mountPoint).filter(m -> m.startsWith(root)).toList();
    if (!stillMounted.isEmpty()) {
      System.out.println("  leaving " + root + " in place: still mounted there: " + stillMounted);
      return;
    }
    try (Stream<Path> paths = Files.walk(root)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

}
