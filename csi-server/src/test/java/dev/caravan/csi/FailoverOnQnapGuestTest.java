package dev.caravan.csi;

import static dev.caravan.csi.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.qnap.SimulatedAppliance;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.ControllerUnpublishVolumeRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.iscsi.Iscsi;
import dev.caravan.storage.iscsi.IscsiSession;
import dev.caravan.storage.iscsi.NodeRecord;
import dev.caravan.storage.multipath.Multipath;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The failover modes that need two nodes sharing one qnap volume, played in the guest: a real LIO
 * target behind the simulated appliance, open-iscsi and multipathd. Two plugin instances run in this
 * JVM (forked JVMs are 10-25 times slower in the guest): node A logs in as the host's own initiator
 * (iscsid's default interface), node B through an open-iscsi interface with an initiator name of its
 * own ({@code qnap.iscsi-iface}), each with its own node id, data directory and mount root. So the
 * appliance's ACL, the fence, sees two initiators, as it would two hosts.
 *
 * <p>One kernel has one multipathd, and both initiators reach the same LUN, so the same WWID: while A
 * still has its map, B's paths would join A's map rather than make one of B's own. So here B stages
 * only after A has unstaged, as Nomad's order in a drain has it anyway; two nodes holding sessions to
 * one LUN at once (a lost client still logged in while the replacement attaches) needs two hosts.
 */
class FailoverOnQnapGuestTest {
  static final String IFACE_B = "caravan-node-b";
  static final String NODE_B = "iqn.2026-01.dev.caravan.test:node-b";
  static final Duration WRITES = Duration.ofMinutes(2);

  private TestBackend.QnapTestBackend backend;
  private PluginFixture a;
  private PluginFixture b;
  private long last = System.nanoTime();

  /** Prints how long the step just finished took: where the guest's time goes, in the log. */
  private void step(String done) {
    long now = System.nanoTime();
    System.out.printf("  %-48s %6d ms%n", done, (now - last) / 1_000_000);
    last = now;
  }

  @BeforeEach
  void twoNodes() throws IOException {
    backend = (TestBackend.QnapTestBackend) TestBackend.qnapOnLio();
    a = PluginFixture.start(backend);
    Iscsi.system().defineIface(IFACE_B, NODE_B);
    b = PluginFixture.start(backend.secondNode(a.work, NODE_B, IFACE_B));
    step("two plugins, node B on its own interface");
  }

  @AfterEach
  void stop() throws IOException {
    try {
      if (b != null) {
        b.close();
      }
    } finally {
      try {
        if (a != null) {
          a.close();
        }
      } finally {
        Iscsi.system().deleteIface(IFACE_B);
      }
    }
  }

  /**
   * Mode 1, planned node drain: the task stops cleanly on A, Nomad unpublishes, unstages and
   * ControllerUnpublishes there, then ControllerPublishes, stages and publishes on B, where the
   * rescheduled task finds every record A fsynced. Nothing of A is left: no session, node record,
   * multipath map, mount or ACL entry.
   */
  @Test
  void aDrainedNodeHandsTheVolumeOverAndLeavesNothingBehind() throws Exception {
    String nodeA = backend.nodeId();
    VolumeCapability cap = Caps.mount("ext4");
    Volume v = a.controller.createVolume(CreateVolumeRequest.newBuilder().setName("drained").addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(1L << 30)).build()).getVolume();
    String id = v.getVolumeId();
    String iqn = v.getVolumeContextMap().get("targetIqn");
    String wwid = "3" + v.getVolumeContextMap().get("naa");
    SimulatedAppliance appliance = backend.appliance(a.work);

    Path stagingA = a.dir("staging/default/drained/rw-file-system-single-node-writer");
    Path targetA = a.dir("per-alloc/a1/drained").resolve("rw-file-system-single-node-writer");
    controllerPublish(a, id, nodeA, cap);
    stage(a, v, stagingA, cap);
    publish(a, id, stagingA, targetA, cap);
    assertThat(Iscsi.system().sessions()).filteredOn(s -> s.target().equals(iqn))
        .as("A logs in on both portals as the host's initiator").hasSize(2)
        .allSatisfy(s -> assertThat(Iscsi.system().initiatorName(s)).contains(nodeA));
    RecordLog.Writer task = RecordLog.start(targetA.resolve("records"), 1);
    task.awaitDurable(FailoverConformance.BEFORE, WRITES);
    step("A attached, its task writing");

    long durable = task.stop(); // the drain stops the task cleanly
    long drained = System.nanoTime();
    unpublish(a, id, targetA);
    unstage(a, id, stagingA);
    controllerUnpublish(b, id, nodeA);
    step("A unpublished, unstaged, ControllerUnpublished");
    assertThat(Iscsi.system().sessions()).as("no session of A").noneMatch(s -> s.target().equals(iqn));
    assertThat(Iscsi.system().nodes()).as("no node record of A").noneMatch(r -> r.target().equals(iqn));
    assertThat(Multipath.system().maps()).as("no multipath map").noneMatch(m -> m.wwid().value().equals(wwid));
    assertThat(a.ourMounts()).as("no mount on A").isEmpty();
    assertThat(appliance.acl(id)).as("no ACL entry for A").doesNotContain(nodeA).isEmpty();

    Path stagingB = b.dir("staging/default/drained/rw-file-system-single-node-writer");
    Path targetB = b.dir("per-alloc/b1/drained").resolve("rw-file-system-single-node-writer");
    controllerPublish(b, id, NODE_B, cap);
    stage(b, v, stagingB, cap);
    publish(b, id, stagingB, targetB, cap);
    List<IscsiSession> sessionsB = Iscsi.system().sessions().stream().filter(s -> s.target().equals(iqn)).toList();
    assertThat(sessionsB).as("B logs in on both portals through its interface, as its own initiator").hasSize(2)
        .allSatisfy(s -> {
          assertThat(s.iface()).isEqualTo(IFACE_B);
          assertThat(Iscsi.system().initiatorName(s)).contains(NODE_B);
        });
    assertThat(appliance.acl(id)).containsExactly(NODE_B);
    assertThat(RecordLog.read(targetB.resolve("records"))).as("every record A fsynced, intact")
        .isEqualTo(new RecordLog.Contents(durable, 0));
    RecordLog.Writer rescheduled = RecordLog.start(targetB.resolve("records"), 2);
    rescheduled.awaitDurable(durable + 1, WRITES);
    Duration recovery = Duration.ofNanos(System.nanoTime() - drained);
    step("B attached, its task writing");
    rescheduled.awaitDurable(durable + FailoverConformance.AFTER, WRITES);
    long total = rescheduled.stop();
    assertThat(RecordLog.read(targetB.resolve("records"))).isEqualTo(new RecordLog.Contents(total, 0));

    unpublish(b, id, targetB);
    unstage(b, id, stagingB);
    assertThat(Iscsi.system().through(IFACE_B).session(iqn, dev.caravan.storage.iscsi.Portal.parse(
        TestBackend.QnapTestBackend.LIO_PORTALS.get(0)))).as("B logged out").isEmpty();
    assertThat(Iscsi.system().nodes()).extracting(NodeRecord::target).doesNotContain(iqn);
    controllerUnpublish(b, id, NODE_B);
    a.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(a.storageObjects()).isEmpty();
    step("B detached, volume deleted");
    FailoverReport.record(1, "qnap", "planned drain from A (host's initiator) to B (an interface with its own"
        + " initiator name): every fsynced record on B; no session, node record, map, mount or ACL entry of A left"
        + " (time: the task's stop on A to the first durable record on B)", recovery);
  }

  /**
   * Mode 3, Nomad client lost with its host still running: A's task keeps writing. B's
   * ControllerPublish is refused, naming A, while A's initiator holds the ACL, and B's {@code caravan
   * inspect} shows the appliance's record of who holds it. The operator's {@code nomad volume detach}
   * (ControllerUnpublish of A) takes A out of the ACL: from then on no write of A lands, and A's
   * writes fail (once multipath stops queueing). A's plugin unstages cleanly when its client is back,
   * and then B attaches and finds every record A had fsynced before the fence.
   */
  @Test
  void aLostClientIsFencedUntilDetachedAndNothingItWritesAfterwardsLands() throws Exception {
    String nodeA = backend.nodeId();
    VolumeCapability cap = Caps.mount("ext4");
    Volume v = a.controller.createVolume(CreateVolumeRequest.newBuilder().setName("lost").addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(1L << 30)).build()).getVolume();
    String id = v.getVolumeId();
    String iqn = v.getVolumeContextMap().get("targetIqn");
    String wwid = "3" + v.getVolumeContextMap().get("naa");
    SimulatedAppliance appliance = backend.appliance(a.work);
    Path stagingA = a.dir("staging/default/lost/rw-file-system-single-node-writer");
    Path targetA = a.dir("per-alloc/a1/lost").resolve("rw-file-system-single-node-writer");
    controllerPublish(a, id, nodeA, cap);
    stage(a, v, stagingA, cap);
    publish(a, id, stagingA, targetA, cap);
    RecordLog.Writer task = RecordLog.start(targetA.resolve("records"), 1);
    task.awaitDurable(FailoverConformance.BEFORE, WRITES);
    step("A attached, its task writing");

    // A's client is gone; Nomad places the replacement on B and asks for the volume there.
    var refused = error(() -> controllerPublish(b, id, NODE_B, cap));
    assertThat(refused.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(refused.getStatus().getDescription()).contains(nodeA);
    assertThat(appliance.acl(id)).containsExactly(nodeA);
    String inspected = b.plugin().observability().inspector().inspect(id).toJson().toString();
    assertThat(inspected).as("caravan inspect on B names the holder").contains("publishedTo").contains(nodeA);
    assertThat(a.plugin().observability().inspector().inspect(id).findings())
        .as("caravan inspect on A: journal, multipath map and mounts agree").isEmpty();
    long fenced = task.durable();
    task.awaitDurable(fenced + 10, WRITES);
    step("B refused, A still writing");

    // The operator: nomad volume detach -node A.
    long beforeDetach = task.durable();
    controllerUnpublish(b, id, nodeA);
    long detached = System.nanoTime();
    assertThat(appliance.acl(id)).isEmpty();
    Thread.sleep(3_000);
    long settled = task.durable();
    Thread.sleep(3_000);
    assertThat(task.durable()).as("no record of A becomes durable once the fence is up").isEqualTo(settled);
    System.out.printf("  records durable at the detach %d, 3 s later %d%n", beforeDetach, settled);
    awaitFailure(task, FENCE_FAILS);
    // An upper bound: the writer is polled, and its failure may have come before the checks above.
    Duration failed = Duration.ofNanos(System.nanoTime() - detached);
    step("A fenced: its writes had failed " + failed.toMillis() + " ms after the detach");

    // A's client is back: Nomad unpublishes and unstages there; nothing of A stays.
    unpublish(a, id, targetA);
    unstage(a, id, stagingA);
    assertThat(Iscsi.system().sessions()).as("no session of A").noneMatch(s -> s.target().equals(iqn));
    assertThat(Iscsi.system().nodes()).as("no node record of A").noneMatch(r -> r.target().equals(iqn));
    assertThat(Multipath.system().maps()).as("no multipath map").noneMatch(m -> m.wwid().value().equals(wwid));
    assertThat(a.ourMounts()).as("no mount on A").isEmpty();
    step("A unstaged cleanly");

    Path stagingB = b.dir("staging/default/lost/rw-file-system-single-node-writer");
    Path targetB = b.dir("per-alloc/b1/lost").resolve("rw-file-system-single-node-writer");
    controllerPublish(b, id, NODE_B, cap);
    stage(b, v, stagingB, cap);
    publish(b, id, stagingB, targetB, cap);
    RecordLog.Contents found = RecordLog.read(targetB.resolve("records"));
    assertThat(found.records()).as("every record A fsynced before the fence, and at most the one in flight")
        .isBetween(settled, settled + 1);
    RecordLog.Writer replacement = RecordLog.start(targetB.resolve("records"), 2);
    replacement.awaitDurable(found.records() + 1, WRITES);
    Duration recovery = Duration.ofNanos(System.nanoTime() - detached);
    long total = replacement.stop();
    step("B attached, its task writing");
    assertThat(RecordLog.read(targetB.resolve("records"))).isEqualTo(new RecordLog.Contents(total, 0));

    unpublish(b, id, targetB);
    unstage(b, id, stagingB);
    controllerUnpublish(b, id, NODE_B);
    a.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(a.storageObjects()).isEmpty();
    FailoverReport.record(3, "qnap", "client lost, host up: B's publish refused naming A; inspect on B names the"
        + " ACL holder; after the detach no write of A landed and A's writes had failed within " + failed.toMillis()
        + " ms; A unstaged cleanly; B found every fsynced record (time: the detach to B's first durable record,"
        + " A's unstage included)", recovery);
  }

  /** How long A's writes may take to fail once fenced: multipath queues for no_path_retry checks first. */
  static final Duration FENCE_FAILS = Duration.ofSeconds(100);

  /** Waits for the writer to fail (a write or fsync returned an error). */
  static void awaitFailure(RecordLog.Writer task, Duration timeout) throws InterruptedException {
    long start = System.nanoTime();
    while (!task.failed()) {
      if (System.nanoTime() - start > timeout.toNanos()) {
        throw new AssertionError("A's writer neither failed nor made a record durable in " + timeout
            + " after the fence (multipath still queueing?)");
      }
      Thread.sleep(100);
    }
  }

  // ---------------------------------------------------------------------------------------------

  static void controllerPublish(PluginFixture f, String id, String node, VolumeCapability cap) {
    f.controller.controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId(node)
        .setVolumeCapability(cap).build());
  }

  static void controllerUnpublish(PluginFixture f, String id, String node) {
    f.controller.controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id)
        .setNodeId(node).build());
  }

  static void stage(PluginFixture f, Volume v, Path staging, VolumeCapability cap) {
    f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setStagingTargetPath(staging.toString()).setVolumeCapability(cap).putAllVolumeContext(v.getVolumeContextMap())
        .build());
  }

  static void publish(PluginFixture f, String id, Path staging, Path target, VolumeCapability cap) {
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setTargetPath(target.toString()).setVolumeCapability(cap).build());
  }

  static void unpublish(PluginFixture f, String id, Path target) {
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString())
        .build());
  }

  static void unstage(PluginFixture f, String id, Path staging) {
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).build());
  }
}
