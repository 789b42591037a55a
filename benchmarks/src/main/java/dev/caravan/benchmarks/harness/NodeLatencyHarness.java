package dev.caravan.benchmarks.harness;

import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsResponse;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Node RPC latency of a real {@code caravan serve} process (started through {@code bin/caravan}, file
 * backend, real loop devices and mounts) over its real unix socket, through a real grpc-java client,
 * one call at a time, as Nomad makes them.
 *
 * <p>Why not JMH: publish and unpublish (and stage and unstage) are a pair of states. Timing one with
 * the other in a {@code @Setup(Level.Invocation)} is what JMH warns against (the setup's cost and its
 * timestamps leak into short measurements), and timing the pair hides which half is slow. Here each
 * iteration makes both calls and times each one on its own with {@link System#nanoTime()}, so every
 * call starts from the state it is meant for. Each phase runs {@code --warmup} untimed iterations
 * first (the server's JIT and the client's), then {@code --iterations} timed ones; percentiles are
 * exact over all timed calls.
 *
 * <p>Phases: publish/unpublish pairs (a fresh Nomad-style per-alloc target each time, parent
 * directory made untimed, as Nomad makes it), NodeGetVolumeStats on a published target, stage/unstage
 * cycles of an already formatted volume, and for comparison the same publish through {@code mount
 * --bind} / {@code umount} run by host-storage's ToolRunner (the shell-out peers use) and through
 * host-storage's {@code Mounts.bind}/{@code unmount} called in this process (the floor: a mountinfo
 * read and a syscall each, no RPC and no journal).
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar dev.caravan.benchmarks.harness.NodeLatencyHarness \
 *     [--iterations 2000] [--warmup 500] [--jar csi-server/target/caravan.jar] [--launcher bin/caravan]
 * </pre>
 */
public final class NodeLatencyHarness {
  private static final long MIB = 1L << 20;
  private static final Duration TOOL_TIMEOUT = Duration.ofSeconds(30);
  private static final String USAGE = "rw-file-system-single-node-writer";
  private static final VolumeCapability CAP = VolumeCapability.newBuilder()
      .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
      .setAccessMode(VolumeCapability.AccessMode.newBuilder()
          .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
      .build();

  private final int iterations;
  private final int warmup;
  private final Path work;
  private final Path root;
  private NodeGrpc.NodeBlockingStub node;
  private IdentityGrpc.IdentityBlockingStub identity;
  private Path serverLog;
  /** Server-side times (the server's own per-RPC log line, "us="), by operation name. */
  private final List<Samples> serverSide = new ArrayList<>();

  private NodeLatencyHarness(int iterations, int warmup, Path work) {
    this.iterations = iterations;
    this.warmup = warmup;
    this.work = work;
    this.root = work.resolve("nomad/csi/monolith/caravan");
  }

  public static void main(String[] args) throws Exception {
    Options o = new Options(args, Map.of("iterations", "2000", "warmup", "500", "launcher", "", "jar", "", "serve-args", "",
        "work-dir", System.getProperty("java.io.tmpdir"), "phases", "probe,publish,stats,stage,binary,direct"));
    Machine.requireRoot();
    Machine.quietClientLogs();
    System.out.println("node latency harness: " + Machine.describe() + " (before)");
    Path work = Files.createTempDirectory(Path.of(o.get("work-dir")), "caravan-bench-node-");
    NodeLatencyHarness h = new NodeLatencyHarness(o.integer("iterations"), o.integer("warmup"), work);
    List<String> phases = List.of(o.get("phases").split(",", -1));
    List<Samples> results = new ArrayList<>();
    Map<String, Long> rss;
    Path launcher = o.launcher();
    System.out.println("server: " + launcher + " serve (file backend), data and mounts under " + work);
    // Resources close in reverse: the server stops first, then the clean-up runs.
    try (AutoCloseable cleanup = h::cleanUp;
        ServerProcess server = ServerProcess.start(launcher, work, o.serverEnv(), o.serveArgs())) {
      long readyNanos = server.awaitProbeReady(Duration.ofSeconds(60));
      System.out.printf("server pid %d answered Probe ready %.0f ms after start%n", server.pid(), readyNanos / 1e6);
      try (UnixChannel ch = new UnixChannel(server.socket())) {
        h.node = NodeGrpc.newBlockingStub(ch.channel());
        h.identity = IdentityGrpc.newBlockingStub(ch.channel());
        h.serverLog = work.resolve("server.log");
        ControllerGrpc.ControllerBlockingStub controller = ControllerGrpc.newBlockingStub(ch.channel());
        String pub = h.createVolume(controller, "bench-publish");
        String stg = h.createVolume(controller, "bench-stage");
        Path staging = h.stage(pub);
        if (phases.contains("probe")) {
          results.add(h.probe());
        }
        if (phases.contains("publish")) {
          results.addAll(h.publishUnpublish(pub, staging));
        }
        if (phases.contains("stats")) {
          results.add(h.stats(pub, staging));
        }
        if (phases.contains("binary")) {
          results.addAll(h.bindPairs("mount --bind (process)", "umount (process)", staging, true));
        }
        if (phases.contains("direct")) {
          results.addAll(h.bindPairs("Mounts.bind (in-process floor)", "Mounts.unmount (in-process floor)", staging, false));
        }
        h.unstage(pub, staging);
        if (phases.contains("stage")) {
          results.addAll(h.stageCycles(stg));
        }
        TimeUnit.SECONDS.sleep(2);
        rss = server.rss();
        controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(pub).build());
        controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(stg).build());
      }
    }
    System.out.println();
    System.out.println(Samples.header());
    results.forEach(s -> System.out.println(s.row()));
    System.out.println();
    System.out.println("Server side: the server's own log line for each timed call (from the start of the call in its");
    System.out.println("outermost interceptor to the response being handed to grpc), same calls as above:");
    System.out.println();
    System.out.println(Samples.header());
    h.serverSide.forEach(s -> System.out.println(s.row()));
    System.out.println();
    System.out.println("server memory after the run (KiB): " + rss);
    System.out.println("node latency harness: load average " + Machine.load() + " (after)");
  }

  private Samples probe() throws IOException {
    Samples probe = new Samples("Probe (no-op RPC: transport floor)", iterations);
    ProbeRequest r = ProbeRequest.getDefaultInstance();
    for (int i = 0; i < warmup; i++) {
      identity.probe(r);
    }
    long from = logSize();
    for (int i = 0; i < iterations; i++) {
      long t0 = System.nanoTime();
      identity.probe(r);
      probe.add(System.nanoTime() - t0);
    }
    serverSide("Probe", from, "Probe");
    return probe;
  }

  private long logSize() throws IOException {
    return Files.size(serverLog);
  }

  /**
   * Collects the "us=" of the server's log lines for {@code method} written since byte {@code from}
   * (the server writes each line just after it hands over the response, so the last call's line can
   * land a moment after the loop ends; the count column shows whether any was missed).
   */
  private void serverSide(String name, long from, String method) throws IOException {
    Samples s = new Samples(name + " (server side)", iterations);
    byte[] all = Files.readAllBytes(serverLog);
    String text = new String(all, (int) Math.min(from, all.length), (int) Math.max(0, all.length - from),
        java.nio.charset.StandardCharsets.UTF_8);
    String marker = "rpc method=" + method + " ";
    for (String line : text.split("\n", -1)) {
      int at = line.indexOf(marker);
      int us = line.indexOf(" us=", Math.max(0, at));
      if (at >= 0 && line.contains("code=OK") && us > 0) {
        String digits = line.substring(us + 4).split("[^0-9]", 2)[0];
        s.add(Long.parseLong(digits) * 1000);
      }
    }
    if (s.count() > 0) {
      serverSide.add(s);
    }
  }

  private String createVolume(ControllerGrpc.ControllerBlockingStub controller, String name) {
    return controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(CAP)
        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(64 * MIB)).build()).getVolume().getVolumeId();
  }

  private Path stagingPath(String vol) throws IOException {
    return Files.createDirectories(root.resolve("staging/default/" + vol + "/" + USAGE));
  }

  private Path stage(String vol) throws IOException {
    Path staging = stagingPath(vol);
    node.nodeStageVolume(stageRequest(vol, staging));
    return staging;
  }

  private static NodeStageVolumeRequest stageRequest(String vol, Path staging) {
    return NodeStageVolumeRequest.newBuilder().setVolumeId(vol).setStagingTargetPath(staging.toString())
        .setVolumeCapability(CAP).build();
  }

  private static NodeUnstageVolumeRequest unstageRequest(String vol, Path staging) {
    return NodeUnstageVolumeRequest.newBuilder().setVolumeId(vol).setStagingTargetPath(staging.toString()).build();
  }

  private void unstage(String vol, Path staging) {
    node.nodeUnstageVolume(unstageRequest(vol, staging));
  }

  /** Nomad 1.8+'s layout: per-alloc/&lt;alloc&gt;/&lt;vol&gt;/&lt;usage&gt;; Nomad makes the parent. */
  private Path target(int i, String vol) throws IOException {
    Path parent = Files.createDirectories(root.resolve("per-alloc/alloc-" + i + "/" + vol));
    return parent.resolve(USAGE);
  }

  private void dropAlloc(int i) throws IOException {
    Path alloc = root.resolve("per-alloc/alloc-" + i);
    try (Stream<Path> paths = Files.walk(alloc)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }

  private List<Samples> publishUnpublish(String vol, Path staging) throws IOException {
    Samples publish = new Samples("NodePublishVolume", iterations);
    Samples unpublish = new Samples("NodeUnpublishVolume", iterations);
    long from = -1;
    for (int i = 0; i < warmup + iterations; i++) {
      if (i == warmup) {
        from = logSize();
      }
      Path target = target(i, vol);
      NodePublishVolumeRequest p = NodePublishVolumeRequest.newBuilder().setVolumeId(vol)
          .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).setVolumeCapability(CAP).build();
      NodeUnpublishVolumeRequest u =
          NodeUnpublishVolumeRequest.newBuilder().setVolumeId(vol).setTargetPath(target.toString()).build();
      long t0 = System.nanoTime();
      node.nodePublishVolume(p);
      long t1 = System.nanoTime();
      node.nodeUnpublishVolume(u);
      long t2 = System.nanoTime();
      if (i == 0) {
        check(!MountTable.isMountPoint(target) && !Files.exists(target), "unpublish left " + target + " behind");
      }
      if (i >= warmup) {
        publish.add(t1 - t0);
        unpublish.add(t2 - t1);
      }
      dropAlloc(i);
    }
    serverSide("NodePublishVolume", from, "NodePublishVolume");
    serverSide("NodeUnpublishVolume", from, "NodeUnpublishVolume");
    return List.of(publish, unpublish);
  }

  private Samples stats(String vol, Path staging) throws IOException {
    Samples stats = new Samples("NodeGetVolumeStats", iterations);
    Path target = target(-1, vol);
    node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).setVolumeCapability(CAP).build());
    NodeGetVolumeStatsRequest r =
        NodeGetVolumeStatsRequest.newBuilder().setVolumeId(vol).setVolumePath(target.toString()).build();
    NodeGetVolumeStatsResponse first = node.nodeGetVolumeStats(r);
    check(first.getUsageCount() == 2 && !first.getVolumeCondition().getAbnormal(), "unexpected stats " + first);
    long from = -1;
    for (int i = 0; i < warmup + iterations; i++) {
      if (i == warmup) {
        from = logSize();
      }
      long t0 = System.nanoTime();
      node.nodeGetVolumeStats(r);
      long t1 = System.nanoTime();
      if (i >= warmup) {
        stats.add(t1 - t0);
      }
    }
    serverSide("NodeGetVolumeStats", from, "NodeGetVolumeStats");
    node.nodeUnpublishVolume(
        NodeUnpublishVolumeRequest.newBuilder().setVolumeId(vol).setTargetPath(target.toString()).build());
    dropAlloc(-1);
    return stats;
  }

  /** The same bind of the staging path onto a fresh target, through the binaries or in process. */
  private List<Samples> bindPairs(String bindName, String unbindName, Path staging, boolean binaries)
      throws IOException {
    Samples bind = new Samples(bindName, iterations);
    Samples unbind = new Samples(unbindName, iterations);
    for (int i = 0; i < warmup + iterations; i++) {
      Path target = Files.createDirectories(target(i, "binary"));
      long t0 = System.nanoTime();
      if (binaries) {
        ToolRunner.run(List.of("mount", "--bind", staging.toString(), target.toString()), TOOL_TIMEOUT);
      } else {
        Mounts.bind(staging, target, false);
      }
      long t1 = System.nanoTime();
      if (i == 0) {
        check(MountTable.isMountPoint(target), bindName + " did not mount " + target);
      }
      if (binaries) {
        ToolRunner.run(List.of("umount", target.toString()), TOOL_TIMEOUT);
      } else {
        Mounts.unmount(target);
      }
      long t2 = System.nanoTime();
      if (i == 0) {
        check(!MountTable.isMountPoint(target), unbindName + " left " + target + " mounted");
      }
      if (i >= warmup) {
        bind.add(t1 - t0);
        unbind.add(t2 - t1);
      }
      dropAlloc(i);
    }
    return List.of(bind, unbind);
  }

  /** Stage/unstage cycles of a volume formatted by an untimed first stage. */
  private List<Samples> stageCycles(String vol) throws IOException {
    Samples stage = new Samples("NodeStageVolume (formatted)", iterations);
    Samples unstage = new Samples("NodeUnstageVolume", iterations);
    Path staging = stagingPath(vol);
    node.nodeStageVolume(stageRequest(vol, staging)); // formats
    node.nodeUnstageVolume(unstageRequest(vol, staging));
    long from = -1;
    for (int i = 0; i < warmup + iterations; i++) {
      if (i == warmup) {
        from = logSize();
      }
      long t0 = System.nanoTime();
      node.nodeStageVolume(stageRequest(vol, staging));
      long t1 = System.nanoTime();
      if (i == 0) {
        check(MountTable.isMountPoint(staging), "stage did not mount " + staging);
      }
      node.nodeUnstageVolume(unstageRequest(vol, staging));
      long t2 = System.nanoTime();
      if (i >= warmup) {
        stage.add(t1 - t0);
        unstage.add(t2 - t1);
      }
    }
    serverSide("NodeStageVolume (formatted)", from, "NodeStageVolume");
    serverSide("NodeUnstageVolume", from, "NodeUnstageVolume");
    return List.of(stage, unstage);
  }

  /** Unmounts whatever a failed run left under the work directory, then deletes it. */
  private void cleanUp() throws IOException {
    List<Path> left = MountTable.read().stream().map(m -> m.mountPoint()).filter(m -> m.startsWith(work))
        .sorted(Comparator.comparingInt(Path::getNameCount).reversed()).toList();
    for (Path m : left) {
      System.err.println("cleaning up a mount the run left behind: " + m);
      while (MountTable.isMountPoint(m) && Mounts.unmount(m)) {
        // stacked
      }
    }
    for (LoopDevice l : LoopDevices.list()) {
      if (l.backingFile().startsWith(work)) {
        System.err.println("detaching a loop device the run left behind: " + l.device());
        LoopDevices.detach(l);
      }
    }
    if (MountTable.read().stream().noneMatch(m -> m.mountPoint().startsWith(work))) {
      try (Stream<Path> paths = Files.walk(work)) {
        for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }

  private static void check(boolean ok, String message) {
    if (!ok) {
      throw new IllegalStateException(message);
    }
  }
}
