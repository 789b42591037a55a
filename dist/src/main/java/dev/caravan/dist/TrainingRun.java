package dev.caravan.dist;

import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.ControllerGetCapabilitiesRequest;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.GetPluginCapabilitiesRequest;
import dev.caravan.csi.v1.GetPluginInfoRequest;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.NodeGetCapabilitiesRequest;
import dev.caravan.csi.v1.NodeGetInfoRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.ProbeResponse;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.grpc.netty.shaded.io.netty.channel.unix.DomainSocketAddress;
import io.grpc.stub.StreamObserver;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * Starts {@code caravan serve} as a child process and drives it as a CO would, through a real gRPC
 * client on its unix socket: the build runs it to train the JVM AOT cache (the server is started with
 * {@code -XX:AOTCacheOutput}), and {@code dist/cold-start} runs it to time a cold start. It prints the
 * milliseconds from starting the server process to the first answered Probe, then (unless
 * {@code --probe-only}) calls the identity, controller and node RPCs that need no root on the file
 * backend, and stops the server with SIGTERM, as Nomad does. With {@code --thread-cpu} it also prints
 * where the server's CPU time went by then, per JVM thread ({@code /proc/PID/task/TID/schedstat}), so a
 * slow start can be split into the main thread's work, the JIT compilers and the rest. With
 * {@code --node-cycle DIR} it also stages, publishes, reads the stats of, unpublishes and unstages the
 * volume under DIR (which needs root and a loop device; refused, it is left out and said so).
 *
 * <p>{@code TrainingRun [--probe-only] [--thread-cpu] [--node-cycle DIR] SOCKET -- SERVER_COMMAND...}
 */
public final class TrainingRun {
  private static final long DEADLINE_SECONDS = 60;

  private TrainingRun() {}

  public static void main(String[] args) throws IOException, InterruptedException {
    List<String> all = Arrays.asList(args);
    int dashes = all.indexOf("--");
    boolean probeOnly = all.subList(0, Math.max(dashes, 0)).contains("--probe-only");
    boolean threadCpu = all.subList(0, Math.max(dashes, 0)).contains("--thread-cpu");
    int cycleAt = all.subList(0, Math.max(dashes, 0)).indexOf("--node-cycle");
    if (dashes < 1 || dashes == all.size() - 1 || (cycleAt >= 0 && cycleAt + 1 >= dashes - 1)) {
      System.err.println("usage: TrainingRun [--probe-only] [--thread-cpu] [--node-cycle DIR] SOCKET -- SERVER_COMMAND...");
      System.exit(2);
    }
    Optional<Path> nodeCycle = cycleAt < 0 ? Optional.empty() : Optional.of(Path.of(all.get(cycleAt + 1)));
    Path socket = Path.of(all.get(dashes - 1));
    List<String> command = all.subList(dashes + 1, all.size());
    System.exit(run(socket, command, probeOnly, threadCpu, nodeCycle));
  }

  private static int run(Path socket, List<String> command, boolean probeOnly, boolean threadCpu,
      Optional<Path> nodeCycle) throws IOException, InterruptedException {
    warmClient(socket);
    long start = System.nanoTime();
    Process server = new ProcessBuilder(command).inheritIO().start();
    int status = drive(socket, server, start, probeOnly, threadCpu, nodeCycle);
    server.destroy(); // SIGTERM, as Nomad stops a plugin: it drains, and the JVM writes its AOT cache on the way out
    if (!server.waitFor(DEADLINE_SECONDS, TimeUnit.SECONDS)) {
      server.destroyForcibly();
      System.err.println("training run: the server did not stop on SIGTERM");
      return 1;
    }
    int exit = server.exitValue();
    // 143 is 128 + SIGTERM: the JVM's own exit status after a SIGTERM it handled.
    return status != 0 ? status : exit == 0 || exit == 143 ? 0 : exit;
  }

  private static int drive(Path socket, Process server, long start, boolean probeOnly, boolean threadCpu,
      Optional<Path> nodeCycle) throws InterruptedException {
    if (!awaitSocket(socket, server, start)) {
      return 1;
    }
    try (UnixChannel ch = new UnixChannel(socket)) {
      var identity = IdentityGrpc.newBlockingStub(ch.channel()).withWaitForReady()
          .withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
      boolean ready;
      try {
        ready = identity.probe(ProbeRequest.getDefaultInstance()).getReady().getValue();
      } catch (StatusRuntimeException e) {
        if (e.getStatus().getCode() != Status.Code.FAILED_PRECONDITION) {
          throw e;
        }
        ready = false; // a build machine without loop devices: the training still exercises the server
      }
      long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
      // The server's CPU time so far: unlike the wall time, it barely moves with the machine's other load.
      long cpu = server.info().totalCpuDuration().map(d -> d.toMillis()).orElse(-1L);
      System.out.printf(Locale.ROOT, "first Probe answered %d ms after start, server CPU %d ms (ready=%s)%n",
          millis, cpu, ready);
      if (threadCpu) {
        printThreadCpu(server.pid());
      }
      if (!probeOnly) {
        exercise(ch, nodeCycle);
      }
      return 0;
    } catch (StatusRuntimeException e) {
      System.err.println("training run: " + e.getStatus());
      return 1;
    }
  }

  /**
   * Makes one whole Probe call, over a unix socket, to a stand-in Identity service in this JVM, so that
   * this client's gRPC, Netty, HTTP/2 and protobuf paths are loaded and run once before the server
   * starts: the time to the first Probe is then the server's, as for Nomad, whose client is already
   * running, and not this JVM's own first call (a call to a socket nobody listens on, which fails at
   * the connect, left the HTTP/2 path cold: 0.3 s of the figure, alternating the two on a 2-CPU machine
   * at load 4).
   */
  private static void warmClient(Path socket) throws IOException, InterruptedException {
    Path warm = socket.resolveSibling(socket.getFileName() + ".warm-up");
    Files.deleteIfExists(warm);
    EventLoopGroup loop = new EpollEventLoopGroup(1);
    Server stand = NettyServerBuilder.forAddress(new DomainSocketAddress(warm.toString()))
        .channelType(EpollServerDomainSocketChannel.class).bossEventLoopGroup(loop).workerEventLoopGroup(loop)
        .addService(new IdentityGrpc.IdentityImplBase() {
          @Override
          public void probe(ProbeRequest request, StreamObserver<ProbeResponse> answer) {
            answer.onNext(ProbeResponse.getDefaultInstance());
            answer.onCompleted();
          }
        }).build().start();
    try (UnixChannel ch = new UnixChannel(warm)) {
      IdentityGrpc.newBlockingStub(ch.channel()).withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS)
          .probe(ProbeRequest.getDefaultInstance());
    } finally {
      stand.shutdownNow().awaitTermination(DEADLINE_SECONDS, TimeUnit.SECONDS);
      loop.shutdownGracefully(0, 0, TimeUnit.SECONDS).await(DEADLINE_SECONDS, TimeUnit.SECONDS);
      Files.deleteIfExists(warm);
    }
  }

  /**
   * The server's CPU time so far per thread, largest first, as {@code thread-cpu NAME MS} lines (threads
   * of one kind, e.g. the C2 compilers, summed), from each task's schedstat (nanoseconds on the CPU). A
   * thread that already ended is not counted.
   */
  private static void printThreadCpu(long pid) {
    Map<String, Long> byName = new TreeMap<>();
    try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "task"))) {
      for (Path task : tasks) {
        try {
          String name = Files.readString(task.resolve("comm")).strip().replaceAll("[0-9]+$", "#");
          String stat = Files.readString(task.resolve("schedstat"));
          long nanos = Long.parseLong(stat.substring(0, stat.indexOf(' ')));
          byName.merge(name, nanos, Long::sum);
        } catch (IOException | RuntimeException gone) {
          // the thread ended between the listing and the read
        }
      }
    } catch (IOException e) {
      System.out.println("thread-cpu unavailable: " + e.getMessage());
      return;
    }
    byName.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed())
        .forEach(e -> System.out.printf(Locale.ROOT, "thread-cpu %s %d%n", e.getKey().replace(' ', '_'),
            TimeUnit.NANOSECONDS.toMillis(e.getValue())));
  }

  private static boolean awaitSocket(Path socket, Process server, long start) throws InterruptedException {
    while (!Files.exists(socket)) {
      if (!server.isAlive()) {
        System.err.println("training run: the server exited with " + server.exitValue() + " before listening");
        return false;
      }
      if (System.nanoTime() - start > TimeUnit.SECONDS.toNanos(DEADLINE_SECONDS)) {
        System.err.println("training run: no socket at " + socket + " after " + DEADLINE_SECONDS + " s");
        return false;
      }
      Thread.sleep(2);
    }
    return true;
  }

  /**
   * The RPCs a CO makes on a node and controller plugin's first minutes, all root-free on the file
   * backend; with {@code nodeCycle}, also a volume's life on the node, which needs root.
   */
  private static void exercise(UnixChannel ch, Optional<Path> nodeCycle) {
    var identity = IdentityGrpc.newBlockingStub(ch.channel()).withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
    var controller = ControllerGrpc.newBlockingStub(ch.channel())
        .withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
    var node = NodeGrpc.newBlockingStub(ch.channel()).withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS);
    identity.getPluginInfo(GetPluginInfoRequest.getDefaultInstance());
    identity.getPluginCapabilities(GetPluginCapabilitiesRequest.getDefaultInstance());
    controller.controllerGetCapabilities(ControllerGetCapabilitiesRequest.getDefaultInstance());
    node.nodeGetInfo(NodeGetInfoRequest.getDefaultInstance());
    node.nodeGetCapabilities(NodeGetCapabilitiesRequest.getDefaultInstance());
    VolumeCapability cap = VolumeCapability.newBuilder()
        .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
        .setAccessMode(VolumeCapability.AccessMode.newBuilder()
            .setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
        .build();
    String volume = controller.createVolume(CreateVolumeRequest.newBuilder()
        .setName("caravan-training").addVolumeCapabilities(cap)
        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(16L << 20)).build()).getVolume().getVolumeId();
    controller.listVolumes(ListVolumesRequest.getDefaultInstance());
    try {
      // A request the server refuses, so the validation and error paths are in the cache too.
      controller.createVolume(CreateVolumeRequest.getDefaultInstance());
    } catch (StatusRuntimeException expected) {
      // INVALID_ARGUMENT, as the CSI spec names for a request without a name.
    }
    nodeCycle.ifPresent(dir -> cycle(node, volume, cap, dir));
    controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(volume).build());
    System.out.println("training run: GetPluginInfo, GetPluginCapabilities, ControllerGetCapabilities, NodeGetInfo,"
        + " NodeGetCapabilities, CreateVolume, ListVolumes, DeleteVolume answered");
  }

  /** A workload's life on the node: stage, publish, stats, unpublish, unstage, under {@code dir}. */
  private static void cycle(NodeGrpc.NodeBlockingStub node, String volume, VolumeCapability cap, Path dir) {
    String staging = dir.resolve("staging").toString();
    String target = dir.resolve("target").toString();
    try {
      node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(volume).setStagingTargetPath(staging)
          .setVolumeCapability(cap).build());
    } catch (StatusRuntimeException e) {
      System.out.println("training run: no node cycle, NodeStageVolume answered " + e.getStatus());
      return;
    }
    try {
      node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(volume)
          .setStagingTargetPath(staging).setTargetPath(target).setVolumeCapability(cap).build());
      node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(volume).setVolumePath(target)
          .build());
    } finally {
      // Taken down also when a call above failed: the training leaves no mount and no loop device.
      node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(volume).setTargetPath(target)
          .build());
      node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(volume)
          .setStagingTargetPath(staging).build());
    }
    System.out.println("training run: NodeStageVolume, NodePublishVolume, NodeGetVolumeStats, NodeUnpublishVolume,"
        + " NodeUnstageVolume answered");
  }
}
