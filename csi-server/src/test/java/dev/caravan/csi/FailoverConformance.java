package dev.caravan.csi;

import static dev.caravan.csi.Caps.MIB;
import static dev.caravan.csi.GrpcOutcomes.code;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.observe.inspect.Finding;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The failover modes of issue 14 that one node can play, each on its own, with a real workload: a
 * writer appending fsynced, checksummed records to the volume ({@link RecordLog}) and a verifier that
 * reads them back. This class plays Nomad's part in the order {@code ../shared/docs/nomad-csi.md}
 * describes (NodeUnpublish when a task stops, NodePublish for its replacement, NodeUnstage once the
 * node holds no allocation of the volume) and records each mode's outcome and time to recover
 * ({@link FailoverReport}); docs/failover.md lists the modes and the test that proves each.
 *
 * <p>Mode 7 on the file backend (its data directory frozen) is in {@link FailoverConformanceOnFileTest}.
 * The modes that need a second node (a reschedule, a lost client, a lost host, a controller on
 * another instance) or a storage API to slow down build on the multi-node and qnap work and are not
 * here yet.
 */
abstract class FailoverConformance {
  /** Records a writer makes durable before the fault, and after it, before the scenario calls it recovered. */
  static final int BEFORE = 100;
  static final int AFTER = 100;
  static final Duration WRITES = Duration.ofSeconds(60);

  PluginFixture f;

  abstract TestBackend backend();

  @AfterEach
  void stop() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  /** Mode 2, on the node: the task crashes and restarts there. Nomad unpublishes and publishes; the stage stays. */
  @Test
  void aCrashedTaskRestartsOnTheSameNodeOnItsStage() throws Exception {
    Host.requireLoopAndExt4();
    f = PluginFixture.start(backend());
    VolumeCapability cap = Caps.mount("ext4");
    InUse v = inUse("task-crash", cap);
    String id = v.id();
    Path staging = v.staging();
    Path first = v.target();
    Path second = f.dir("per-alloc/a2").resolve("task-crash");
    MountEntry stageMount = MountTable.at(staging).orElseThrow();
    long durable = v.task().stop(); // the task dies between two records
    long crashed = System.nanoTime();

    unpublish(id, first);
    publish(id, staging, second, cap);
    RecordLog.Writer restarted = RecordLog.start(second.resolve("records"), 2);
    restarted.awaitDurable(durable + 1, WRITES);
    Duration recovery = Duration.ofNanos(System.nanoTime() - crashed);
    restarted.awaitDurable(durable + AFTER, WRITES);

    assertThat(MountTable.at(staging)).as("the stage outlives the task").get()
        .extracting(MountEntry::id).isEqualTo(stageMount.id());
    assertThat(errors(id)).as("caravan inspect while the restarted task runs").isEmpty();
    long total = restarted.stop();
    assertThat(RecordLog.read(second.resolve("records"))).as("every fsynced record, intact")
        .isEqualTo(new RecordLog.Contents(total, 0));

    unpublish(id, second);
    unstage(id, staging);
    deleteAndExpectNothingLeft(id);
    FailoverReport.record(2, backend().driver(), "restart on the same node: unpublish, publish, the stage stays;"
        + " every fsynced record is there (time: the crash to the new task's first durable record)", recovery);
  }

  /**
   * Mode 5: the node plugin is SIGKILLed with the volume staged and published. The workload keeps
   * writing (the plugin is control plane only); the next plugin reconciles from its journal, and
   * Nomad's later unpublish and unstage work.
   */
  @Test
  void aKilledNodePluginLeavesTheWorkloadWritingAndTheNextOneTakesOver() throws Exception {
    Host.requireLoopAndExt4();
    f = PluginFixture.unstarted(backend());
    VolumeCapability cap = Caps.mount("ext4");
    InUse v;
    try (PluginProcess plugin = PluginProcess.start(f)) {
      v = inUse("plugin-kill", cap);
      assertThat(plugin.kill()).isEqualTo(137);
    }
    String id = v.id();
    Path staging = v.staging();
    Path target = v.target();
    try (RecordLog.Writer task = v.task()) {
      long atKill = task.durable();
      task.awaitDurable(atKill + AFTER, WRITES); // no plugin runs now
      assertThat(MountTable.isMountPoint(staging)).isTrue();
      assertThat(MountTable.isMountPoint(target)).isTrue();

      long restarted = System.nanoTime();
      f.startPlugin();
      var stats = f.node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id)
          .setVolumePath(target.toString()).build());
      Duration recovery = Duration.ofNanos(System.nanoTime() - restarted);
      assertThat(stats.getVolumeCondition().getAbnormal()).isFalse();
      assertThat(errors(id)).as("caravan inspect after the restart").isEmpty();

      long total = task.stop();
      unpublish(id, target);
      unstage(id, staging);
      assertThat(MountTable.isMountPoint(target)).isFalse();
      assertThat(total).isGreaterThanOrEqualTo(BEFORE + AFTER);
      verifyAfterRestage(id, staging, cap, total);
      deleteAndExpectNothingLeft(id);
      FailoverReport.record(5, backend().driver(), "node plugin SIGKILLed: the workload kept writing (no downtime);"
          + " the next plugin served stats, unpublish and unstage from its journal (time: its start to its first"
          + " answer)", recovery);
    }
  }

  /**
   * Mode 5, second half: the node plugin is down when Nomad unpublishes. The call fails (Nomad
   * retries it), nothing on the node changes, and the retry against the restarted plugin finishes.
   */
  @Test
  void anUnpublishWhileTheNodePluginIsDownFailsAndItsRetryFinishes() throws Exception {
    Host.requireLoopAndExt4();
    f = PluginFixture.start(backend());
    VolumeCapability cap = Caps.mount("ext4");
    InUse v = inUse("plugin-down", cap);
    String id = v.id();
    Path staging = v.staging();
    Path target = v.target();
    long total = v.task().stop();

    f.stopPlugin();
    long down = System.nanoTime();
    f.connect(); // to a socket nobody serves
    assertThat(code(() -> unpublish(id, target))).isEqualTo(Code.UNAVAILABLE);
    assertThat(MountTable.isMountPoint(target)).as("a failed unpublish changes nothing").isTrue();
    assertThat(MountTable.isMountPoint(staging)).isTrue();
    f.disconnect();

    f.startPlugin();
    unpublish(id, target);
    Duration recovery = Duration.ofNanos(System.nanoTime() - down);
    unstage(id, staging);
    verifyAfterRestage(id, staging, cap, total);
    deleteAndExpectNothingLeft(id);
    FailoverReport.record(5, backend().driver(), "node plugin down at unpublish: UNAVAILABLE, nothing changed;"
        + " the retry finished (time: the plugin's stop to the retried unpublish's answer, its restart included)",
        recovery);
  }

  /** A volume in use as Nomad leaves it for a running task: made, staged, published, its writer past {@link #BEFORE}. */
  record InUse(String id, Path staging, Path target, RecordLog.Writer task) {}

  /** Makes {@code name}, stages and publishes it for allocation a1, and starts the task's writer there. */
  InUse inUse(String name, VolumeCapability cap) throws Exception {
    String id = create(name, cap);
    Path staging = f.dir("staging/" + name);
    Path target = f.dir("per-alloc/a1").resolve(name);
    stage(id, staging, cap);
    publish(id, staging, target, cap);
    RecordLog.Writer task = RecordLog.start(target.resolve("records"), 1);
    task.awaitDurable(BEFORE, WRITES);
    return new InUse(id, staging, target, task);
  }

  /** Stages the volume again, as the next allocation would, and checks every fsynced record is there. */
  void verifyAfterRestage(String id, Path staging, VolumeCapability cap, long records) throws IOException {
    Path target = f.dir("per-alloc/verifier").resolve(staging.getFileName());
    stage(id, staging, cap);
    publish(id, staging, target, cap);
    assertThat(RecordLog.read(target.resolve("records"))).as("every fsynced record, intact")
        .isEqualTo(new RecordLog.Contents(records, 0));
    unpublish(id, target);
    unstage(id, staging);
  }

  List<Finding> errors(String id) {
    return f.plugin().observability().inspector().inspect(id).findings().stream()
        .filter(x -> x.severity().equals("error")).toList();
  }

  String create(String name, VolumeCapability cap) {
    return f.controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(backend().scaled(64 * MIB))).build()).getVolume().getVolumeId();
  }

  void stage(String id, Path staging, VolumeCapability cap) {
    f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setVolumeCapability(cap).build());
  }

  void publish(String id, Path staging, Path target, VolumeCapability cap) {
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setTargetPath(target.toString()).setVolumeCapability(cap).build());
  }

  void unpublish(String id, Path target) {
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString())
        .build());
  }

  void unstage(String id, Path staging) {
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .build());
  }

  void deleteAndExpectNothingLeft(String id) throws IOException {
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(f.storageObjects()).isEmpty();
    assertThat(f.ourMounts()).isEmpty();
  }
}
