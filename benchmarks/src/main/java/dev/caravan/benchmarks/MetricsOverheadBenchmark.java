package dev.caravan.benchmarks;

import dev.caravan.benchmarks.harness.Ext4Writer;
import dev.caravan.csi.Plugin;
import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.observe.metrics.PrometheusMetrics;
import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodePublishVolumeResponse;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeResponse;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * NodePublishVolume with the plugin's metrics off and on: what the metrics hooks add to the RPC path.
 * Each trial starts a plugin in process ({@link Plugin#start}) on the file backend in a temporary
 * directory, creates and stages one 64 MiB ext4 volume on a real loop device, and drives it with a
 * real gRPC client over the unix socket, one call at a time, as Nomad does.
 *
 * <ul>
 *   <li>{@link #publishUnpublish}: NodePublishVolume onto a target that does not exist yet (the plugin
 *       makes it and bind-mounts the staging path), then NodeUnpublishVolume of the same target, which
 *       unmounts and removes it, so every operation starts from the same state. One JMH operation is
 *       the pair: timing publish alone would need a {@code Level.Invocation} setup to unpublish, which
 *       JMH warns distorts sub-millisecond measurements.
 *   <li>{@link #publishIdempotent}: NodePublishVolume of a target that is already published with the
 *       same arguments: transport, interceptors, journal lookup and one mountinfo read, no mount
 *       syscall and no journal write; the cleanest view of what the metrics hooks cost.
 * </ul>
 *
 * <p>{@code metrics=on} is {@code ObserveSettings.on(HttpSettings.loopback(0))}, what {@code caravan
 * serve} runs with by default: the RPC interceptor, node-operation and backend hooks, and the observe
 * HTTP server with its background usage collector (nobody scrapes it during the benchmark). The per-RPC
 * log line is turned off on both sides (it would flood JMH's output; it is written after the response).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 4, time = 2)
@Measurement(iterations = 8, time = 3)
@Fork(value = 2, jvmArgsAppend = {"--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC", "-Xss512k"})
public class MetricsOverheadBenchmark {
  private static final long MIB = 1L << 20;
  private static final String USAGE = Ext4Writer.USAGE;
  private static final VolumeCapability CAP = Ext4Writer.CAPABILITY;
  // java.util.logging holds loggers weakly: keep the one whose level is changed.
  private static final Logger RPC_LOG = Logger.getLogger("dev.caravan.csi.rpc");

  @Param({"off", "on"})
  public String metrics;

  private Path work;
  private Path data;
  private Plugin plugin;
  private UnixChannel channel;
  private NodeGrpc.NodeBlockingStub node;
  private ControllerGrpc.ControllerBlockingStub controller;
  private String volume;
  private Path staging;
  private Path freshTarget;
  private Path publishedTarget;
  private NodePublishVolumeRequest publishFresh;
  private NodeUnpublishVolumeRequest unpublishFresh;
  private NodePublishVolumeRequest publishAgain;

  @Setup
  public void setUp() throws IOException {
    Requirements.requireRoot();
    Requirements.requireLoopControl();
    boolean on = switch (metrics) {
      case "on" -> true;
      case "off" -> false;
      default -> throw new IllegalArgumentException("metrics must be on or off, not " + metrics);
    };
    RPC_LOG.setLevel(Level.WARNING);
    work = Files.createTempDirectory("caravan-bench-metrics-");
    data = work.resolve("data");
    // Nomad's host layout: the plugin's default allowed root is then <work>/client/csi.
    Path socket = work.resolve("client/csi/plugins/alloc-1/csi.sock");
    Path root = work.resolve("client/csi/monolith/caravan");
    Plugin.Settings settings = Plugin.Settings.of("file", socket, "bench-node", data);
    plugin = Plugin.start(on ? settings.withObserve(ObserveSettings.on(HttpSettings.loopback(0))) : settings);
    check(plugin.observability().metrics().enabled() == on, "metrics enabled is not " + on);
    channel = new UnixChannel(socket);
    node = NodeGrpc.newBlockingStub(channel.channel());
    controller = ControllerGrpc.newBlockingStub(channel.channel());

    volume = controller.createVolume(CreateVolumeRequest.newBuilder().setName("bench-metrics")
        .addVolumeCapabilities(CAP).setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(64 * MIB))
        .build()).getVolume().getVolumeId();
    staging = Files.createDirectories(root.resolve("staging/default/" + volume + "/" + USAGE));
    node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(volume)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(CAP).build());
    check(MountTable.at(staging).map(m -> m.fsType().equals("ext4")).orElse(false),
        "staging path " + staging + " is not an ext4 mount");
    check(!ourLoops().isEmpty(), "no loop device backs the staged volume");

    // Nomad 1.8+ layout: per-alloc/<alloc>/<vol>/<usage>; Nomad makes the parent, the plugin the target.
    freshTarget = Files.createDirectories(root.resolve("per-alloc/alloc-fresh/" + volume)).resolve(USAGE);
    publishedTarget = Files.createDirectories(root.resolve("per-alloc/alloc-published/" + volume)).resolve(USAGE);
    publishFresh = publishRequest(freshTarget);
    unpublishFresh = NodeUnpublishVolumeRequest.newBuilder().setVolumeId(volume)
        .setTargetPath(freshTarget.toString()).build();
    publishAgain = publishRequest(publishedTarget);
    node.nodePublishVolume(publishAgain);
    check(MountTable.isMountPoint(publishedTarget), "published target " + publishedTarget + " is not mounted");

    // Both benchmarks must do the real thing: the fresh target really gets mounted and really goes away.
    node.nodePublishVolume(publishFresh);
    check(MountTable.isMountPoint(freshTarget), "publish did not mount " + freshTarget);
    node.nodeUnpublishVolume(unpublishFresh);
    check(!MountTable.isMountPoint(freshTarget) && !Files.exists(freshTarget),
        "unpublish left " + freshTarget + " behind");
    if (on) {
      check(scrape().contains("method=\"NodePublishVolume\""), "metrics on, but NodePublishVolume is not counted");
    }
  }

  @TearDown
  public void tearDown() throws IOException {
    List<String> problems = new ArrayList<>();
    try {
      if (node != null && volume != null) {
        node.nodeUnpublishVolume(unpublishFresh);
        node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(volume)
            .setTargetPath(publishedTarget.toString()).build());
        node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(volume)
            .setStagingTargetPath(staging.toString()).build());
        controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(volume).build());
      }
    } catch (RuntimeException e) {
      problems.add("clean-up through the plugin failed: " + e);
    } finally {
      if (channel != null) {
        channel.close();
      }
      if (plugin != null) {
        plugin.shutdown(Duration.ofSeconds(2));
      }
    }
    // Whatever the plugin did not undo, undo here, and say so: only our own mounts and loop devices.
    for (MountEntry m : ourMounts()) {
      problems.add("mount " + m.mountPoint());
      for (int i = 0; i < 100 && MountTable.isMountPoint(m.mountPoint()) && Mounts.unmount(m.mountPoint()); i++) {
        // unwind stacked mounts
      }
    }
    for (LoopDevice l : ourLoops()) {
      problems.add("loop device " + l.device());
      LoopDevices.detach(l);
    }
    if (ourMounts().isEmpty()) {
      try (Stream<Path> paths = Files.walk(work)) {
        for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
    if (!problems.isEmpty()) {
      throw new IllegalStateException("teardown had to clean up after the plugin: " + problems);
    }
  }

  /** Publish onto a target that does not exist, then unpublish it (which removes it). */
  @Benchmark
  public NodeUnpublishVolumeResponse publishUnpublish() {
    node.nodePublishVolume(publishFresh);
    return node.nodeUnpublishVolume(unpublishFresh);
  }

  /** Publish of a target already published with the same arguments: OK, nothing to do. */
  @Benchmark
  public NodePublishVolumeResponse publishIdempotent() {
    return node.nodePublishVolume(publishAgain);
  }

  private NodePublishVolumeRequest publishRequest(Path target) {
    return NodePublishVolumeRequest.newBuilder().setVolumeId(volume).setStagingTargetPath(staging.toString())
        .setTargetPath(target.toString()).setVolumeCapability(CAP).build();
  }

  private String scrape() throws IOException {
    if (!(plugin.observability().metrics() instanceof PrometheusMetrics p)) {
      return "";
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    p.write(out);
    return out.toString(StandardCharsets.UTF_8);
  }

  /** Mounts under this trial's directory, deepest first. */
  private List<MountEntry> ourMounts() {
    return MountTable.read().stream()
        .filter(m -> m.mountPoint().startsWith(work))
        .sorted(Comparator.comparing((MountEntry m) -> m.mountPoint().getNameCount()).reversed())
        .toList();
  }

  /** Loop devices backed by files in this trial's data directory. */
  private List<LoopDevice> ourLoops() {
    return LoopDevices.list().stream().filter(l -> l.backingFile().startsWith(data)).toList();
  }

  private static void check(boolean condition, String problem) {
    if (!condition) {
      throw new IllegalStateException(problem);
    }
  }
}
