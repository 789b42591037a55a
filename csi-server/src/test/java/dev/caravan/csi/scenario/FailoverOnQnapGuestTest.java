package dev.caravan.csi.scenario;

import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.qnap.SimulatedAppliance;
import dev.caravan.csi.testing.GuestCommands;
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
import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.iscsi.Iscsi;
import dev.caravan.storage.iscsi.IscsiSession;
import dev.caravan.storage.iscsi.NodeRecord;
import dev.caravan.storage.multipath.Multipath;
import dev.caravan.storage.testing.PortalOutage;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
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
 * only after A has unstaged, as Nomad's order in a drain has it anyway (after a power loss, once what
 * A's reboot takes away is gone); two nodes holding sessions to one LUN at once (a lost client still
 * logged in while the replacement attaches) needs two hosts.
 *
 * <p>Nomad is a fake of its HTTP API ({@link NomadScene}) that both plugins read as their task API;
 * each scenario records there what Nomad's calls leave, and reads {@code caravan inspect} from both
 * nodes at its moments.
 */
class FailoverOnQnapGuestTest {
  static final String IFACE_B = "caravan-node-b";
  static final String NODE_B = "iqn.2026-01.dev.caravan.test:node-b";
  static final Duration WRITES = Duration.ofMinutes(2);

  private static final String USAGE = FailoverConformance.USAGE;
  /** The one-kernel artifacts: each node's inspector also sees the other's multipath map and its mounts (same WWID). */
  private static final Set<String> ONE_KERNEL = Set.of("device-without-record", "mount-without-record");

  private TestBackend.QnapTestBackend backend;
  private PluginFixture a;
  private PluginFixture b;
  /** Nomad: both nodes' plugins read its task API, and the scenario records its calls there. */
  private NomadScene nomad;
  private NomadScene.Node clientA;
  private NomadScene.Node clientB;
  /** The portals' traffic dropped by the power-loss scenario, until A's kernel state is gone. */
  private final List<AutoCloseable> outages = new ArrayList<>();
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
    nomad = new NomadScene(true);
    a = PluginFixture.start(backend, nomad.observe());
    Iscsi.system().defineIface(IFACE_B, NODE_B);
    b = PluginFixture.start(backend.secondNode(a.work, NODE_B, IFACE_B), nomad.observe());
    clientA = nomad.node("client-a", backend.nodeId());
    clientB = nomad.node("client-b", NODE_B);
    nomad.controllerOn(clientA, true);
    nomad.controllerOn(clientB, true);
    step("two plugins, node B on its own interface");
  }

  @AfterEach
  void stop() throws Exception {
    try {
      liftOutages(); // a test that failed with the portals dark must not leave them so
    } finally {
      stopPlugins();
    }
  }

  private void stopPlugins() throws IOException {
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
        try {
          Iscsi.system().deleteIface(IFACE_B);
        } finally {
          if (nomad != null) {
            nomad.close();
          }
        }
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
    WritingOnA on = attachOnAAndWrite("drained", cap);
    Volume v = on.volume();
    String id = v.getVolumeId();
    String iqn = on.iqn();
    String wwid = on.wwid();
    SimulatedAppliance appliance = backend.appliance(a.work);
    Path stagingA = on.staging();
    Path targetA = on.target();
    RecordLog.Writer task = on.task();
    assertThat(Iscsi.system().sessions()).filteredOn(s -> s.target().equals(iqn))
        .as("A logs in on both portals as the host's initiator").hasSize(2)
        .allSatisfy(s -> assertThat(Iscsi.system().initiatorName(s)).contains(nodeA));

    long durable = task.stop(); // the drain stops the task cleanly
    long drained = System.nanoTime();
    nomad.stopped(on.alloc(), "complete");
    unpublish(a, id, targetA);
    unstage(a, id, stagingA);
    controllerUnpublish(b, id, nodeA);
    nomad.released(on.alloc());
    step("A unpublished, unstaged, ControllerUnpublished");
    NomadScene.Inspection leftOnA = nomad.inspect(a);
    assertThat(leftOnA.findings()).as("caravan inspect on A after the drain: %s", leftOnA).isEmpty();
    assertThat(List.of(leftOnA.state("backend"), leftOnA.state("attachment"), leftOnA.state("journal"),
        leftOnA.state("nomad"))).as("the LUN is there; nothing of it on A; Nomad agrees")
        .containsExactly("ok", "absent", "absent", "ok");
    assertThat(leftOnA.publishedTo()).as("the ACL, as the inspector reads it").contains("");
    assertThat(leftOnA.claims()).isEmpty();
    assertThat(Iscsi.system().sessions()).as("no session of A").noneMatch(s -> s.target().equals(iqn));
    assertThat(Iscsi.system().nodes()).as("no node record of A").noneMatch(r -> r.target().equals(iqn));
    assertThat(Multipath.system().maps()).as("no multipath map").noneMatch(m -> m.wwid().value().equals(wwid));
    assertThat(a.ourMounts()).as("no mount on A").isEmpty();
    assertThat(appliance.acl(id)).as("no ACL entry for A").doesNotContain(nodeA).isEmpty();

    String allocB = nomad.place("b1", clientB, Optional.of(on.alloc()));
    Path stagingB = b.dir("staging/default/drained/" + USAGE);
    Path targetB = b.dir("per-alloc/" + allocB + "/drained").resolve(USAGE);
    controllerPublish(b, id, NODE_B, cap);
    stage(b, v, stagingB, cap);
    publish(b, id, stagingB, targetB, cap);
    nomad.claimedAndRunning(allocB);
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
    NomadScene.Inspection onB = nomad.inspect(b);
    assertThat(onB.findings()).as("caravan inspect on B, its task writing: %s", onB).isEmpty();
    FailoverConformance.assertAllLayersOk(onB);
    assertThat(onB.mountStates("published")).containsExactly("ok");
    assertThat(onB.publishedTo()).contains(NODE_B);
    assertThat(onB.claims()).containsExactly("write " + allocB + " running on " + clientB.nomadId());
    step("inspected A after the drain and B attached");
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
    WritingOnA on = attachOnAAndWrite("lost", cap);
    Volume v = on.volume();
    String id = v.getVolumeId();
    String iqn = on.iqn();
    String wwid = on.wwid();
    SimulatedAppliance appliance = backend.appliance(a.work);
    Path stagingA = on.staging();
    Path targetA = on.target();
    RecordLog.Writer task = on.task();

    // A's client is gone; Nomad places the replacement on B and asks for the volume there.
    String allocB = lose(on.alloc());
    var refused = error(() -> controllerPublish(b, id, NODE_B, cap));
    assertThat(refused.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(refused.getStatus().getDescription()).contains(nodeA);
    assertThat(appliance.acl(id)).containsExactly(nodeA);
    expectStaleAttachmentOfA(nomad.inspect(b), "B");
    NomadScene.Inspection onA = nomad.inspect(a);
    assertThat(onA.codes()).as("caravan inspect on A: journal, multipath map and mounts agree; Nomad has A's plugin"
        + " unhealthy and no claim of A's: %s", onA).containsExactly("nomad-plugin-unhealthy-here", "stale-attachment");
    FailoverConformance.assertLocalLayersOk(onA);
    assertThat(onA.mountStates("published")).containsExactly("ok");
    assertThat(onA.finding("stale-attachment").next()).isEqualTo(nomad.detach(clientA));
    long fenced = task.durable();
    task.awaitDurable(fenced + 10, WRITES);
    step("B refused, A still writing");

    // The operator: nomad volume detach -node A.
    long beforeDetach = task.durable();
    controllerUnpublish(b, id, nodeA);
    long detached = System.nanoTime();
    nomad.nodePlugin(clientA, true); // A's client is back
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

    Path stagingB = b.dir("staging/default/lost/" + USAGE);
    Path targetB = b.dir("per-alloc/" + allocB + "/lost").resolve(USAGE);
    controllerPublish(b, id, NODE_B, cap);
    stage(b, v, stagingB, cap);
    publish(b, id, stagingB, targetB, cap);
    nomad.claimedAndRunning(allocB);
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

  /**
   * Mode 4, hard power loss of A's host, simulated on the one guest kernel (docs/failover.md says what
   * is simulated and how): at one instant A's filesystem is shut down without flushing its journal,
   * the target hears nothing more from A, and A's plugin is gone. B's ControllerPublish is refused,
   * naming A, while A's initiator holds the ACL, also after A has booted again; nothing on A logs in
   * or maps the volume by itself. After the operator's detach B attaches, ext4 replays the journal
   * and B finds every record A had fsynced before the loss, and at most those in flight. A's plugin,
   * when Nomad finally unpublishes and unstages there, has nothing left to undo but A's node records.
   */
  @Test
  void aPoweredOffNodeIsFencedUntilDetachedAndEveryRecordItFsyncedSurvivesTheJournalReplay() throws Exception {
    String nodeA = backend.nodeId();
    VolumeCapability cap = Caps.mount("ext4");
    WritingOnA on = attachOnAAndWrite("powerloss", cap);
    Volume v = on.volume();
    String id = v.getVolumeId();
    String iqn = on.iqn();
    Wwid wwid = Wwid.of(on.wwid());
    SimulatedAppliance appliance = backend.appliance(a.work);
    Path stagingA = on.staging();
    Path targetA = on.target();
    RecordLog.Writer task = on.task();

    // The power loss. First the filesystem, since that fixes what is on the device: from here on no
    // write of A's reaches it, and the writer's next write or fsync fails. A process on a host that
    // loses power sees no fsync return after the instant; here an fsync still running while the ioctl
    // runs can report success although its transaction never reached the journal (a run saw that
    // record missing after the replay). So the records that must survive are those fsynced before the
    // shutdown began; any the writer saw fsynced after that were in flight.
    FilesystemShutdown.link();
    long fsynced = task.durable();
    FilesystemShutdown.withoutLogFlush(stagingA);
    awaitFailure(task, Duration.ofSeconds(30));
    long seen = task.durable();
    task.close();
    // Then A's side of the network: the target hears nothing more from A (no logout, no ping, no
    // reset), as from a host without power. Queueing is turned off on A's map so that the one write
    // the kernel still tries below (the superblock, at the unmount) fails once the paths do, rather
    // than waiting for no_path_retry.
    for (String portal : TestBackend.QnapTestBackend.LIO_PORTALS) {
      outages.add(PortalOutage.drop(portal));
    }
    String mapA = Multipath.system().map(wwid).orElseThrow().name();
    GuestCommands.run("multipathd", "disablequeueing", "map", mapA);
    a.stopPlugin();
    long lost = System.nanoTime();
    step("power lost: A's writer had fsynced " + fsynced + " records (" + seen + " by its failure)");

    // Nomad places the replacement on B; A's initiator still holds the ACL.
    String allocB = lose(on.alloc());
    var refused = error(() -> controllerPublish(b, id, NODE_B, cap));
    assertThat(refused.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(refused.getStatus().getDescription()).contains(nodeA);
    assertThat(appliance.acl(id)).containsExactly(nodeA);
    expectStaleAttachmentOfA(nomad.inspect(b), "B");
    step("B refused, inspected");

    // A reboots. One kernel holds both nodes, so what A's reboot takes away has to be taken away here
    // before B can stage (B's paths would join A's map): the mounts (lazily, as they are dead), the
    // multipath map and A's sessions, while the target still hears nothing from A.
    GuestCommands.run("umount", "-l", targetA.toString());
    GuestCommands.run("umount", "-l", stagingA.toString());
    Multipath.system().flush(wwid);
    for (IscsiSession s : Iscsi.system().sessions()) {
      if (s.target().equals(iqn)) {
        Iscsi.system().logout(s);
      }
    }
    liftOutages();
    step("A's kernel state gone (" + Duration.ofNanos(System.nanoTime() - lost).toMillis() + " ms after the loss)");
    assertThat(journalNeedsRecovery(lunFile(a)))
        .as("the LUN's ext4 superblock still says its journal needs recovery: A never unmounted it cleanly").isTrue();

    // A is up again, still in the ACL, and nothing attaches by itself: open-iscsi's boot-time login
    // (iscsiadm -m node --loginall=automatic) finds A's node records set to manual start, and A's
    // plugin (its journal where it was, on the data directory) logs in to nothing and maps nothing.
    List<NodeRecord> records = Iscsi.system().nodes().stream().filter(r -> r.target().equals(iqn)).toList();
    assertThat(records).as("A's node records survive its reboot, in /etc/iscsi").isNotEmpty();
    for (NodeRecord r : records) {
      assertThat(GuestCommands.run("iscsiadm", "-m", "node", "-T", iqn, "-p", r.portal().toString(), "-I", r.iface())
          .lines()).as("node record %s", r).contains("node.startup = manual");
    }
    bootTimeLogin();
    a.startPlugin();
    nomad.nodePlugin(clientA, true); // A's client and plugin are back
    assertThat(Iscsi.system().sessions()).as("no session after A's boot").noneMatch(s -> s.target().equals(iqn));
    assertThat(Multipath.system().map(wwid)).as("no multipath map after A's boot").isEmpty();
    assertThat(a.ourMounts()).as("no mount on A").isEmpty();
    // caravan inspect on A: the journal's map is gone and its stage not mounted; A is still in the ACL,
    // and Nomad has no claim of A's. (The restarted plugin's journal keeps the stage, not the publish
    // target whose mount it found gone.)
    NomadScene.Inspection rebooted = nomad.inspect(a);
    assertThat(rebooted.codes()).as("caravan inspect on A after its boot: %s", rebooted)
        .containsExactly("device-detached", "staging-not-mounted", "stale-attachment");
    assertThat(rebooted.finding("device-detached").next()).as("a multipath map, not a loop device")
        .startsWith("findmnt --source ").doesNotContain("losetup");
    assertThat(rebooted.finding("staging-not-mounted").next()).startsWith("findmnt --mountpoint " + stagingA);
    assertThat(rebooted.mountStates("staging")).containsExactly("not-mounted");
    assertThat(rebooted.mountStates("published")).as("the publish target, no longer in the journal").isEmpty();
    assertThat(rebooted.state("attachment")).isEqualTo("detached");
    assertThat(rebooted.finding("stale-attachment").next()).isEqualTo(nomad.detach(clientA));
    assertThat(error(() -> controllerPublish(b, id, NODE_B, cap)).getStatus().getCode())
        .as("A's reboot does not lift the fence").isEqualTo(Code.FAILED_PRECONDITION);
    step("A booted: nothing attached by itself");

    // The operator: nomad volume detach -node A.
    controllerUnpublish(b, id, nodeA);
    long detached = System.nanoTime();
    assertThat(appliance.acl(id)).isEmpty();
    Path stagingB = b.dir("staging/default/powerloss/" + USAGE);
    Path targetB = b.dir("per-alloc/" + allocB + "/powerloss").resolve(USAGE);
    controllerPublish(b, id, NODE_B, cap);
    stage(b, v, stagingB, cap);
    publish(b, id, stagingB, targetB, cap);
    nomad.claimedAndRunning(allocB);
    RecordLog.Contents found = RecordLog.read(targetB.resolve("records"));
    System.out.printf("  fsynced on A before the loss %d (by the writer's failure %d), found on B %d records and %d"
        + " bytes more%n", fsynced, seen, found.records(), found.trailingBytes());
    RecordLog.Writer replacement = RecordLog.start(targetB.resolve("records"), 2);
    replacement.awaitDurable(found.records() + 1, WRITES);
    Duration recovery = Duration.ofNanos(System.nanoTime() - detached);
    long total = replacement.stop();
    step("B attached after the journal replay, its task writing");
    RecordLog.Contents afterwards = RecordLog.read(targetB.resolve("records"));
    // B's detach before the verdicts: a failed check must not leave B's sessions to the next test.
    unpublish(b, id, targetB);
    unstage(b, id, stagingB);
    controllerUnpublish(b, id, NODE_B);
    assertThat(found.records()).as("every record A fsynced before the loss, and at most those in flight")
        .isBetween(fsynced, seen + 1);
    assertThat(found.trailingBytes()).as("at most one torn record after them").isLessThanOrEqualTo(RecordLog.RECORD);
    assertThat(afterwards).isEqualTo(new RecordLog.Contents(total, 0));

    // A's client is back and Nomad releases its claim there. (On two hosts this needs no waiting for
    // B; on one kernel A's unstage would meet B's multipath map, the same WWID.)
    unpublish(a, id, targetA);
    unstage(a, id, stagingA);
    assertThat(Iscsi.system().nodes()).as("no node record of A").noneMatch(r -> r.target().equals(iqn));
    assertThat(Iscsi.system().sessions()).as("no session").noneMatch(s -> s.target().equals(iqn));
    a.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(a.storageObjects()).isEmpty();
    step("A unpublished and unstaged, volume deleted");
    FailoverReport.record(4, "qnap", "power loss of A simulated (ext4 shut down without a log flush, the target"
        + " hearing nothing more from A, plugin gone): B's publish refused naming A, also after A's reboot; nothing"
        + " on A attached by itself; after the detach and the journal replay B found " + found.records() + " records, "
        + fsynced + " fsynced before the loss, " + seen + " by the writer's failure (time: the detach to B's first"
        + " durable record)", recovery);
  }

  /** A volume of {@code name} attached, staged and published on A, and A's task writing durable records to it. */
  private record WritingOnA(Volume volume, String alloc, String iqn, String wwid, Path staging, Path target,
      RecordLog.Writer task) {}

  /** Nomad's volume {@code name}: made, registered, and for allocation a1 on A claimed, attached, staged and published. */
  private WritingOnA attachOnAAndWrite(String name, VolumeCapability cap) throws Exception {
    Volume v = a.controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(1L << 30)).build()).getVolume();
    nomad.register(name, v.getVolumeId());
    String alloc = nomad.place("a1", clientA, Optional.empty());
    Path staging = a.dir("staging/default/" + name + "/" + USAGE);
    Path target = a.dir("per-alloc/" + alloc + "/" + name).resolve(USAGE);
    controllerPublish(a, v.getVolumeId(), backend.nodeId(), cap);
    stage(a, v, staging, cap);
    publish(a, v.getVolumeId(), staging, target, cap);
    nomad.claimedAndRunning(alloc);
    RecordLog.Writer task = RecordLog.start(target.resolve("records"), 1);
    task.awaitDurable(FailoverConformance.BEFORE, WRITES);
    step("A attached, its task writing");
    return new WritingOnA(v, alloc, v.getVolumeContextMap().get("targetIqn"), "3" + v.getVolumeContextMap().get("naa"),
        staging, target, task);
  }

  /**
   * What Nomad records when A's client is lost (modes 3 and 4): A's node plugin fails its health
   * check, A's allocation is lost and no longer a claimant (Nomad frees the claim of a terminal
   * allocation; its past claims are not in the HTTP API, nomad-csi.md §6.2), and the replacement is
   * placed on B, pending while its claim's ControllerPublish is refused. Returns the replacement.
   */
  private String lose(String allocA) {
    nomad.nodePlugin(clientA, false);
    nomad.stopped(allocA, "lost");
    nomad.released(allocA);
    return nomad.place("b1", clientB, Optional.of(allocA));
  }

  /**
   * {@code caravan inspect} on a node without the volume while A's initiator holds the ACL: the one
   * disagreement is the stale attachment, naming A's initiator and Nomad node and the detach of A.
   * On one kernel the node also sees A's multipath map and mounts (the same WWID): findings two
   * hosts would not give, about A's paths.
   */
  private void expectStaleAttachmentOfA(NomadScene.Inspection c, String on) {
    assertThat(c.codes()).as("caravan inspect on %s: %s", on, c).filteredOn(code -> !ONE_KERNEL.contains(code))
        .containsExactly("stale-attachment");
    assertThat(c.findings()).filteredOn(x -> x.code().equals("mount-without-record"))
        .allSatisfy(x -> assertThat(x.message()).as("A's mounts").startsWith(a.work.toString()));
    assertThat(c.finding("stale-attachment")).satisfies(x -> {
      assertThat(x.severity()).isEqualTo("error");
      assertThat(x.message()).contains(backend.nodeId()).contains(clientA.nomadId());
      assertThat(x.next()).isEqualTo(nomad.detach(clientA));
    });
    assertThat(c.publishedTo()).contains(backend.nodeId());
    assertThat(c.state("journal")).isEqualTo("absent");
    assertThat(c.claims()).as("Nomad's claims").isEmpty();
  }

  private void liftOutages() throws Exception {
    while (!outages.isEmpty()) {
      outages.removeLast().close();
    }
  }

  /**
   * What open-iscsi does at boot (its service runs {@code iscsiadm -m node --loginall=automatic}): logs in
   * to every node record whose {@code node.startup} is automatic. Exit 21: there is none.
   */
  private static void bootTimeLogin() throws IOException, InterruptedException {
    Process p = new ProcessBuilder("iscsiadm", "-m", "node", "--loginall=automatic").redirectErrorStream(true).start();
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).strip();
    int rc = p.waitFor();
    System.out.println("  iscsiadm -m node --loginall=automatic: exit " + rc + (out.isEmpty() ? "" : ": " + out));
    assertThat(rc).as("iscsiadm --loginall=automatic: %s", out).isIn(0, 21);
  }

  /** The one LUN file behind the simulated appliance of {@code f} (LioListener's fileio backstores). */
  private static Path lunFile(PluginFixture f) throws IOException {
    try (var files = Files.list(f.work.resolve("lio"))) {
      List<Path> luns = files.filter(p -> p.getFileName().toString().startsWith("lun-")).toList();
      assertThat(luns).as("LUN files of the appliance").hasSize(1);
      return luns.get(0);
    }
  }

  /** Whether the ext4 superblock of {@code image} has EXT4_FEATURE_INCOMPAT_RECOVER: the next mount replays the journal. */
  static boolean journalNeedsRecovery(Path image) throws IOException {
    ByteBuffer sb = ByteBuffer.allocate(1024).order(ByteOrder.LITTLE_ENDIAN);
    try (FileChannel ch = FileChannel.open(image)) {
      while (sb.hasRemaining() && ch.read(sb, 1024 + sb.position()) > 0) {
        // read the whole superblock
      }
    }
    assertThat(Short.toUnsignedInt(sb.getShort(0x38))).as("ext4 magic in %s", image).isEqualTo(0xEF53);
    return (sb.getInt(0x60) & 0x4) != 0;
  }

  /** How long A's writes may take to fail once fenced: multipath queues for no_path_retry checks first. */
  static final Duration FENCE_FAILS = Duration.ofSeconds(100);

  /** Waits for the writer to fail (a write or fsync returned an error). */
  static void awaitFailure(RecordLog.Writer task, Duration timeout) throws InterruptedException {
    long start = System.nanoTime();
    while (!task.failed()) {
      if (System.nanoTime() - start > timeout.toNanos()) {
        throw new AssertionError("A's writer did not fail in " + timeout + " (multipath still queueing?)");
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
