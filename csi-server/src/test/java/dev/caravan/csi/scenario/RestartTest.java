package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.server.CsiServer;
import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.testing.HostRequirements;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Restart safety with a real process kill: the plugin runs as its own JVM ({@code caravan serve}),
 * gets {@code kill -9} with a volume staged and published, and a new process must serve Stats,
 * Unpublish and Unstage for it exactly.
 */
class RestartTest {
  private PluginFixture f;
  private final List<Process> processes = new ArrayList<>();

  @BeforeEach
  void setUp() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    f = PluginFixture.unstarted();
  }

  @AfterEach
  void tearDown() throws IOException, InterruptedException {
    for (Process p : processes) {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
    }
    if (f != null) {
      f.close();
    }
  }

  private Process serve() throws IOException, InterruptedException {
    String java = ProcessHandle.current().info().command().orElse("java");
    Path log = f.work.resolve("plugin-" + processes.size() + ".log");
    Process p = new ProcessBuilder(java, "--enable-native-access=ALL-UNNAMED",
        "-cp", System.getProperty("java.class.path"), "dev.caravan.csi.cli.Main", "serve", "--http-listen=off",
        "--driver=file", "--endpoint", "unix://" + f.socket, "--node-id", PluginFixture.NODE,
        "--data-dir", f.data.toString(), "--journal-dir", f.settings().journalDir().toString())
        .redirectErrorStream(true).redirectOutput(log.toFile()).start();
    processes.add(p);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!CsiServer.isLive(f.socket)) {
      if (!p.isAlive() || System.nanoTime() > deadline) {
        throw new AssertionError("plugin did not come up: " + Files.readString(log));
      }
      Thread.sleep(50);
    }
    f.connect();
    return p;
  }

  @Test
  void killDashNineLeavesMountsAndANewProcessFinishesTheJob() throws Exception {
    VolumeCapability cap = Caps.mount("ext4");
    Process first = serve();
    String vol = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("survivor").addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(64 * MIB)).build()).getVolume().getVolumeId();
    Path staging = f.dir("staging/default/" + vol + "/rw");
    Path targetA = f.dir("per-alloc/a/" + vol).resolve("rw");
    Path targetB = f.dir("per-alloc/b/" + vol).resolve("rw");
    f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(vol).setStagingTargetPath(staging.toString())
        .setVolumeCapability(cap).build());
    for (Path t : List.of(targetA, targetB)) {
      f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(vol).setStagingTargetPath(staging.toString())
          .setTargetPath(t.toString()).setVolumeCapability(cap).build());
    }
    Files.writeString(targetA.resolve("before-crash.txt"), "durable");

    f.disconnect();
    first.destroyForcibly(); // SIGKILL
    assertThat(first.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(first.exitValue()).isEqualTo(137);
    // control plane only: the data path is untouched by the crash
    assertThat(MountTable.isMountPoint(staging)).isTrue();
    assertThat(MountTable.isMountPoint(targetA)).isTrue();
    assertThat(f.ourLoops()).hasSize(1);
    assertThat(Files.readString(targetB.resolve("before-crash.txt"))).isEqualTo("durable");
    assertThat(Files.exists(f.socket)).as("the killed plugin's stale socket").isTrue();

    serve(); // replaces the stale socket
    assertThatThrownBy(() -> Plugin.start(Plugin.Settings.of("file", f.socket, "other", f.work.resolve("other-data"))))
        .isInstanceOf(IOException.class).hasMessageContaining("another process");
    var stats = f.node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(vol)
        .setVolumePath(targetA.toString()).build());
    assertThat(stats.getVolumeCondition().getAbnormal()).isFalse();
    assertThat(stats.getUsage(0).getUsed()).isPositive();
    assertThat(GrpcOutcomes.code(() -> f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging.toString()).build()))).isEqualTo(Code.FAILED_PRECONDITION);
    for (Path t : List.of(targetA, targetB)) {
      f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(vol).setTargetPath(t.toString()).build());
    }
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(vol).setStagingTargetPath(staging.toString()).build());
    assertThat(f.ourMounts()).isEmpty();
    assertThat(f.ourLoops()).isEmpty();
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(vol).build());

    // SIGTERM: bounded drain, socket removed, exit
    Process second = processes.getLast();
    f.disconnect();
    second.destroy();
    assertThat(second.waitFor(20, TimeUnit.SECONDS)).isTrue();
    assertThat(Files.exists(f.socket)).as("socket removed on SIGTERM").isFalse();
  }
}
