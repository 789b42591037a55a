package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.code;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.testing.HostRequirements;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The failover modes of docs/failover.md that one node can play, each on its own, with a real workload: a
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

  /** Nomad's usage directory name for a single-node-writer filesystem volume (nomad-csi.md §5). */
  static final String USAGE = "rw-file-system-single-node-writer";

  PluginFixture f;
  /** Nomad's state around the scenario's volume, as its calls leave it; {@code caravan inspect} reads it. */
  NomadScene nomad;
  /** This node, as Nomad knows it. */
  NomadScene.Node here;

  abstract TestBackend backend();

  @BeforeEach
  void nomad() throws IOException {
    nomad = new NomadScene(false);
    here = nomad.node("client-a", backend().nodeId());
  }

  @AfterEach
  void stop() throws IOException {
    try {
      if (f != null) {
        f.close();
      }
    } finally {
      nomad.close();
    }
  }

  /** Mode 2, on the node: the task crashes and restarts there. Nomad unpublishes and publishes; the stage stays. */
  @Test
  void aCrashedTaskRestartsOnTheSameNodeOnItsStage() throws Exception {
    HostRequirements.assumeLoopAndExt4();
    f = PluginFixture.start(backend(), nomad.observe());
    VolumeCapability cap = Caps.mount("ext4");
    InUse v = inUse("task-crash", cap);
    String id = v.id();
    Path staging = v.staging();
    Path first = v.target();
    MountEntry stageMount = MountTable.at(staging).orElseThrow();
    long durable = v.task().stop(); // the task dies between two records
    long crashed = System.nanoTime();
    nomad.stopped(v.alloc(), "failed");

    unpublish(id, first);
    nomad.released(v.alloc());
    String next = nomad.place("a2", here, Optional.of(v.alloc()));
    Path second = f.dir("per-alloc/" + next + "/" + nomad.volume).resolve(USAGE);
    publish(id, staging, second, cap);
    nomad.claimedAndRunning(next);
    RecordLog.Writer restarted = RecordLog.start(second.resolve("records"), 2);
    restarted.awaitDurable(durable + 1, WRITES);
    Duration recovery = Duration.ofNanos(System.nanoTime() - crashed);
    restarted.awaitDurable(durable + AFTER, WRITES);

    assertThat(MountTable.at(staging)).as("the stage outlives the task").get()
        .extracting(MountEntry::id).isEqualTo(stageMount.id());
    NomadScene.Inspection running = nomad.inspect(f);
    assertThat(running.findings()).as("caravan inspect while the restarted task runs: %s", running).isEmpty();
    assertAllLayersOk(running);
    assertThat(running.claims()).as("Nomad's claims").containsExactly("write " + next + " running on " + here.nomadId());
    assertThat(running.mountStates("published")).containsExactly("ok");
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
    HostRequirements.assumeLoopAndExt4();
    f = PluginFixture.unstarted(backend());
    f.customize = nomad.observe(); // the in-process plugin started after the kill; the process has no observe API
    VolumeCapability cap = Caps.mount("ext4");
    InUse v;
    try (PluginProcess plugin = PluginProcess.start(f)) {
      v = inUse("plugin-kill", cap);
      assertThat(plugin.kill()).isEqualTo(137);
    }
    nomad.nodePlugin(here, false); // Nomad's next health probe of the plugin fails
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
      // Until Nomad probes the new plugin, it still counts the plugin here unhealthy: the only findings.
      NomadScene.Inspection beforeProbe = nomad.inspect(f);
      assertThat(beforeProbe.codes()).as("caravan inspect after the restart, before Nomad's probe: %s", beforeProbe)
          .containsExactly("nomad-plugin-node-unhealthy", "nomad-plugin-unhealthy-here");
      assertThat(beforeProbe.finding("nomad-plugin-node-unhealthy").message()).contains(v.alloc())
          .contains(here.nomadId()).contains("probe failed");
      assertThat(beforeProbe.finding("nomad-plugin-node-unhealthy").next())
          .isEqualTo("nomad plugin status -verbose caravan; nomad node status " + here.nomadId());
      assertThat(beforeProbe.finding("nomad-plugin-unhealthy-here").next()).isEqualTo("nomad plugin status -verbose caravan");
      assertThat(beforeProbe.state("nomad")).isEqualTo("disagrees");
      assertLocalLayersOk(beforeProbe); // the journal reloaded, the mounts and device as the killed plugin left them
      nomad.nodePlugin(here, true);
      NomadScene.Inspection probed = nomad.inspect(f);
      assertThat(probed.findings()).as("caravan inspect once Nomad sees the plugin healthy: %s", probed).isEmpty();
      assertAllLayersOk(probed);

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
    HostRequirements.assumeLoopAndExt4();
    f = PluginFixture.start(backend(), nomad.observe());
    VolumeCapability cap = Caps.mount("ext4");
    InUse v = inUse("plugin-down", cap);
    String id = v.id();
    Path staging = v.staging();
    Path target = v.target();
    long total = v.task().stop();
    nomad.stopped(v.alloc(), "complete");

    f.stopPlugin();
    nomad.nodePlugin(here, false);
    long down = System.nanoTime();
    f.connect(); // to a socket nobody serves
    assertThat(code(() -> unpublish(id, target))).isEqualTo(Code.UNAVAILABLE);
    assertThat(MountTable.isMountPoint(target)).as("a failed unpublish changes nothing").isTrue();
    assertThat(MountTable.isMountPoint(staging)).isTrue();
    f.disconnect();

    f.startPlugin();
    // Before Nomad's retry: the claim of the stopped allocation stays until its unpublish succeeds.
    NomadScene.Inspection stuck = nomad.inspect(f);
    assertThat(stuck.codes()).as("caravan inspect before the retried unpublish: %s", stuck).containsExactly(
        "nomad-claim-held-by-stopped-allocation", "nomad-plugin-node-unhealthy", "nomad-plugin-unhealthy-here");
    assertThat(stuck.finding("nomad-claim-held-by-stopped-allocation")).satisfies(x -> {
      assertThat(x.severity()).isEqualTo("error");
      assertThat(x.message()).contains(v.alloc()).contains("complete (desired stop)").contains(here.name());
      assertThat(x.next()).isEqualTo(nomad.detach(here));
    });
    assertThat(stuck.mountStates("published")).as("the target Nomad has not unpublished yet").containsExactly("ok");
    assertLocalLayersOk(stuck);
    unpublish(id, target);
    Duration recovery = Duration.ofNanos(System.nanoTime() - down);
    unstage(id, staging);
    verifyAfterRestage(id, staging, cap, total);
    deleteAndExpectNothingLeft(id);
    FailoverReport.record(5, backend().driver(), "node plugin down at unpublish: UNAVAILABLE, nothing changed;"
        + " the retry finished (time: the plugin's stop to the retried unpublish's answer, its restart included)",
        recovery);
  }

  /**
   * A volume in use as Nomad leaves it for a running task: made, registered with Nomad, staged and
   * published for its allocation (Nomad's paths), its writer past {@link #BEFORE}.
   */
  record InUse(String id, String alloc, Path staging, Path target, RecordLog.Writer task) {}

  /** Makes {@code name}, Nomad's volume; stages and publishes it for allocation a1 here and starts the task's writer. */
  InUse inUse(String name, VolumeCapability cap) throws Exception {
    String id = create(name, cap);
    nomad.register(name, id);
    String alloc = nomad.place("a1", here, Optional.empty());
    Path staging = f.dir("staging/" + NomadScene.NAMESPACE + "/" + name + "/" + USAGE);
    Path target = f.dir("per-alloc/" + alloc + "/" + name).resolve(USAGE);
    stage(id, staging, cap);
    publish(id, staging, target, cap);
    nomad.claimedAndRunning(alloc);
    RecordLog.Writer task = RecordLog.start(target.resolve("records"), 1);
    task.awaitDurable(BEFORE, WRITES);
    return new InUse(id, alloc, staging, target, task);
  }

  /** Every layer of the chain in its good state: the volume staged and published here, and Nomad agreeing. */
  static void assertAllLayersOk(NomadScene.Inspection chain) {
    assertLocalLayersOk(chain);
    assertThat(chain.state("nomad")).as("nomad: %s", chain).isEqualTo("ok");
  }

  /** This node's layers in their good state: the backend object, its device, the stage and the journal. */
  static void assertLocalLayersOk(NomadScene.Inspection chain) {
    assertThat(List.of(chain.state("backend"), chain.state("attachment"), chain.state("journal")))
        .as("backend, attachment, journal: %s", chain).containsExactly("ok", "ok", "ok");
    assertThat(chain.mountStates("staging")).containsExactly("ok");
    assertThat(chain.mountStates("unrecorded_mounts")).isEmpty();
  }

  /** Stages the volume again, as the next allocation would, and checks every fsynced record is there. */
  void verifyAfterRestage(String id, Path staging, VolumeCapability cap, long records) throws IOException {
    f.verifyAfterRestage(id, staging, cap, records);
  }

  String create(String name, VolumeCapability cap) {
    return f.controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(backend().scaled(64 * MIB))).build()).getVolume().getVolumeId();
  }

  void stage(String id, Path staging, VolumeCapability cap) {
    f.stage(id, staging, cap);
  }

  void publish(String id, Path staging, Path target, VolumeCapability cap) {
    f.publish(id, staging, target, cap);
  }

  void unpublish(String id, Path target) {
    f.unpublish(id, target);
  }

  void unstage(String id, Path staging) {
    f.unstage(id, staging);
  }

  void deleteAndExpectNothingLeft(String id) throws IOException {
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(f.storageObjects()).isEmpty();
    assertThat(f.ourMounts()).isEmpty();
  }
}
