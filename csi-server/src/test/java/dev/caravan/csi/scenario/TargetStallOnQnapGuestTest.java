package dev.caravan.csi.scenario;

import static dev.caravan.csi.testing.GrpcOutcomes.code;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.qnap.SimulatedAppliance;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.ControllerUnpublishVolumeRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeCondition;
import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.iscsi.Iscsi;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.multipath.Multipath;
import dev.caravan.storage.testing.PortalOutage;
import io.grpc.Status.Code;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Mode 7 on qnap's node side, in the guest: the target stalls under a node that has a volume published
 * with a task writing to it and another volume staged. Both portals go dark (netfilter drops their
 * traffic; the LIO target behind the simulated appliance keeps running, as a real appliance does behind
 * a dead link), so every path of both multipath maps fails and dm-multipath queues I/O ({@code
 * no_path_retry 12} at a 2 s polling interval in the guest's multipath.conf: 24 s once the last path
 * has failed). The outage is lifted inside that window, as a short one is.
 *
 * <p>While it lasts, calls that do not need the target answer at once: Probe, NodeGetVolumeStats (its
 * volume condition abnormal, naming each failed path and its portal, read from multipathd and sysfs
 * rather than from the device) and a NodePublishVolume and NodeUnpublishVolume of the staged volume at
 * a second target (bind mounts). A call that does need it, the other volume's NodeUnstageVolume (its
 * unmount writes the superblock), ends by the caller's deadline without an OK and keeps the volume's
 * lock, so that the caller's retry is ABORTED. When the portals are back, multipathd reinstates the
 * paths, the writer resumes without having failed, the retried unstage answers OK only once the mount,
 * map, sessions and node records are gone, and every record the writer fsynced is on the target.
 * {@code caravan inspect} of the published volume (against Nomad's fake: the task's allocation running
 * with the write claim) answers at once throughout: with every path down it names the map, each failed
 * path and its portal, and the commands to run ({@code storage-abnormal}); before and after, no finding.
 */
class TargetStallOnQnapGuestTest {
  /** Nomad's deadline for a Probe (nomad-csi.md §11); also what a monitoring caller of stats gets here. */
  private static final long ANSWER_SECONDS = 5;
  /**
   * The deadline of the unstage that needs the stalled target: short, so that the test shows the call
   * ends by it. Nomad's node detach gives 2 min, an alloc's stop no deadline; neither changes what the
   * plugin does, only when the caller stops waiting.
   */
  private static final long STUCK_CALL_SECONDS = 3;
  /** For calls made while the target answers: a bound on a hang, not a measurement. */
  private static final long CALL_SECONDS = 120;
  private static final Duration WAIT = Duration.ofSeconds(90);

  private TestBackend.QnapTestBackend backend;
  private PluginFixture f;
  /** Nomad, as it records this node, its controller and the allocation that uses the busy volume. */
  private NomadScene nomad;
  private NomadScene.Node here;
  private final List<AutoCloseable> outages = new ArrayList<>();
  private final long started = System.nanoTime();

  @BeforeEach
  void plugin() throws Exception {
    backend = (TestBackend.QnapTestBackend) TestBackend.qnapOnLio();
    backend.assumeAvailable(); // before its node id, which reads open-iscsi's initiator name
    nomad = new NomadScene(true);
    here = nomad.node("client-a", backend.nodeId());
    nomad.controllerOn(here, true);
    f = PluginFixture.start(backend, nomad.observe());
  }

  @AfterEach
  void stop() throws Exception {
    try {
      while (!outages.isEmpty()) {
        outages.removeLast().close(); // a failed test must not leave the portals dark for the next class
      }
      if (f != null) {
        backend.appliance(f.work).heal();
      }
    } finally {
      try {
        if (f != null) {
          f.close();
        }
      } finally {
        if (nomad != null) {
          nomad.close();
        }
      }
    }
  }

  @Test
  void aStalledTargetDelaysOnlyTheCallsThatNeedItAndEverythingConvergesWhenItIsBack() throws Exception {
    VolumeCapability cap = Caps.mount("ext4");
    SimulatedAppliance appliance = backend.appliance(f.work);
    Volume busy = createAndPublish("busy", cap);
    Volume idle = createAndPublish("idle", cap);
    nomad.register("busy", busy.getVolumeId());
    String alloc = nomad.place("a1", here, java.util.Optional.empty());
    Path stagingBusy = f.dir("staging/default/busy/rw-file-system-single-node-writer");
    Path targetBusy = f.dir("per-alloc/" + alloc + "/busy").resolve("rw-file-system-single-node-writer");
    Path secondTarget = f.dir("per-alloc/a2/busy").resolve("rw-file-system-single-node-writer");
    Path stagingIdle = f.dir("staging/default/idle/rw-file-system-single-node-writer");
    stage(busy, stagingBusy, cap);
    publish(busy, stagingBusy, targetBusy, cap);
    stage(idle, stagingIdle, cap);
    nomad.claimedAndRunning(alloc);
    String claim = "write " + alloc + " running on " + here.nomadId();
    RecordLog.Writer task = RecordLog.start(targetBusy.resolve("records"), 1);
    task.awaitDurable(FailoverConformance.BEFORE, WAIT);
    NomadScene.Inspection before = nomad.inspect(f); // also the first, slow in the guest's cold JVM: not timed
    assertThat(before.findings()).as("caravan inspect before the stall: %s", before).isEmpty();
    FailoverConformance.assertAllLayersOk(before);
    // Asked once before the stall too: the guest's JVM is slow to run code the first time, and the
    // outage must end before no_path_retry runs out.
    Wwid wwid = Wwid.of("3" + busy.getVolumeContextMap().get("naa"));
    assertThat(stats(busy, targetBusy).getAbnormal()).as("both paths up").isFalse();
    assertThat(Multipath.system().map(wwid).orElseThrow().upPaths()).hasSize(2);
    assertThat(timed(() -> code(() -> f.identity.withDeadlineAfter(ANSWER_SECONDS, TimeUnit.SECONDS)
        .probe(ProbeRequest.getDefaultInstance()))).value()).isEqualTo(Code.OK);
    log("two volumes staged, one published with its task writing");

    // The target stalls: both portals go dark.
    long stalled = System.nanoTime();
    darken(TestBackend.QnapTestBackend.LIO_PORTALS);
    long darkened = System.nanoTime();

    // The other volume's unstage needs the target (the unmount writes the superblock): it ends by the
    // caller's deadline, never with OK, and holds the volume while its unmount waits in the kernel.
    NodeUnstageVolumeRequest unstageIdle = NodeUnstageVolumeRequest.newBuilder().setVolumeId(idle.getVolumeId())
        .setStagingTargetPath(stagingIdle.toString()).build();
    Timed<Code> first = timed(() -> code(() -> f.node.withDeadlineAfter(STUCK_CALL_SECONDS, TimeUnit.SECONDS)
        .nodeUnstageVolume(unstageIdle)));
    assertThat(first.value()).as("an unstage that needs the stalled target").isEqualTo(Code.DEADLINE_EXCEEDED);
    assertThat(first.took()).as("it ends by the caller's deadline")
        .isLessThan(Duration.ofSeconds(STUCK_CALL_SECONDS + 2));
    Timed<Code> retried = timed(() -> code(() -> f.node.withDeadlineAfter(STUCK_CALL_SECONDS, TimeUnit.SECONDS)
        .nodeUnstageVolume(unstageIdle)));
    assertThat(retried.value()).as("its retry while the first still waits").isEqualTo(Code.ABORTED);
    log("portals dark in " + Duration.ofNanos(darkened - stalled).toMillis() + " ms; the idle volume's unstage: "
        + first.value() + " after " + first.took().toMillis() + " ms, its retry " + retried.value() + " after "
        + retried.took().toMillis() + " ms");

    // What does not need the target answers at once.
    Timed<Boolean> probe = timed(() -> f.identity.withDeadlineAfter(ANSWER_SECONDS, TimeUnit.SECONDS)
        .probe(ProbeRequest.getDefaultInstance()).getReady().getValue());
    assertThat(probe.value()).as("Probe: the appliance's API answers; the paths are not Probe's").isTrue();
    publish(busy, stagingBusy, secondTarget, cap, ANSWER_SECONDS);
    assertThat(MountTable.isMountPoint(secondTarget)).as("a second target, bound from the stalled stage").isTrue();
    f.node.withDeadlineAfter(ANSWER_SECONDS, TimeUnit.SECONDS).nodeUnpublishVolume(NodeUnpublishVolumeRequest
        .newBuilder().setVolumeId(busy.getVolumeId()).setTargetPath(secondTarget.toString()).build());
    assertThat(MountTable.isMountPoint(secondTarget)).isFalse();
    log("Probe ready in " + probe.took().toMillis() + " ms; a second target published and unpublished");

    // The appliance's API gone too: Probe says so before Nomad's 5 s run out; stats need no API.
    appliance.refuseConnections();
    Timed<Code> unready = timed(() -> code(() -> f.identity.withDeadlineAfter(ANSWER_SECONDS, TimeUnit.SECONDS)
        .probe(ProbeRequest.getDefaultInstance())));
    assertThat(unready.value()).as("Probe with the appliance's API refusing").isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(unready.took()).as("Probe's answer within Nomad's 5 s").isLessThan(Duration.ofSeconds(ANSWER_SECONDS));
    stats(busy, targetBusy);
    appliance.heal();
    log("API refused: Probe " + unready.value() + " in " + unready.took().toMillis() + " ms, stats answered");

    // Stats say the truth: every path failed, by portal, once the iSCSI layer and multipathd have seen
    // it. From then on dm-multipath queues the writer's I/O, and the outage has to end soon.
    VolumeCondition down = awaitCondition(busy, targetBusy, c -> c.getAbnormal()
        && c.getMessage().startsWith("no path of multipath map " + wwid.value() + " is up")
        && TestBackend.QnapTestBackend.LIO_PORTALS.stream().allMatch(p -> c.getMessage().contains("through " + p
            + ": dm failed")));
    long stuck = task.durable();
    Thread.sleep(500);
    assertThat(task.durable()).as("no record becomes durable while the target is stalled").isEqualTo(stuck);
    assertThat(task.failed()).as("the writer waits: dm-multipath queues its I/O").isFalse();
    // caravan inspect: the map with no path up, by path and portal, and what to run; read from
    // multipathd and sysfs like the stats, so it answers while the I/O queues. The volume's other
    // layers (the LUN and its ACL on the appliance, the map, the mounts, the journal, Nomad's claim)
    // agree.
    NomadScene.Inspection stuckChain = inspect();
    assertThat(stuckChain.codes()).as("caravan inspect while every path is down: %s", stuckChain)
        .containsExactly("storage-abnormal");
    assertThat(stuckChain.finding("storage-abnormal")).satisfies(x -> {
      assertThat(x.severity()).isEqualTo("error");
      assertThat(x.message()).contains(busy.getVolumeId())
          .contains("no path of multipath map " + wwid.value() + " is up");
      TestBackend.QnapTestBackend.LIO_PORTALS.forEach(p -> assertThat(x.message()).contains("through " + p + ": dm failed"));
      assertThat(x.next()).startsWith("multipathd show paths; iscsiadm -m session -P 1  # is ")
          .contains(String.join(" / ", TestBackend.QnapTestBackend.LIO_PORTALS));
    });
    FailoverConformance.assertAllLayersOk(stuckChain);
    assertThat(stuckChain.claims()).containsExactly(claim);
    assertThat(stuckChain.publishedTo()).contains(backend.nodeId());

    // The portals are back.
    long healing = System.nanoTime();
    while (!outages.isEmpty()) {
      outages.removeLast().close();
    }
    log("every path had failed: " + down.getMessage() + "; the outage lifted " + Duration.ofNanos(healing - stalled)
        .toSeconds() + " s after it began (its rules removed in " + Duration.ofNanos(System.nanoTime() - healing)
        .toMillis() + " ms)");
    task.awaitDurable(stuck + 1, WAIT);
    Duration recovery = Duration.ofNanos(System.nanoTime() - healing);
    awaitCondition(busy, targetBusy, c -> !c.getAbnormal());
    log("the writer resumed " + recovery.toMillis() + " ms after the portals came back; every path up again");

    // The retried unstage converges, and its OK comes only once the work is done.
    String iqnIdle = idle.getVolumeContextMap().get("targetIqn");
    Wwid wwidIdle = Wwid.of("3" + idle.getVolumeContextMap().get("naa"));
    List<Code> retries = new ArrayList<>();
    long deadline = System.nanoTime() + WAIT.toNanos();
    Code answer;
    while ((answer = code(() -> f.node.withDeadlineAfter(ANSWER_SECONDS, TimeUnit.SECONDS)
        .nodeUnstageVolume(unstageIdle))) != Code.OK) {
      retries.add(answer);
      assertThat(System.nanoTime()).as("the unstage converges; retries answered %s", retries).isLessThan(deadline);
      Thread.sleep(500);
    }
    assertThat(retries).as("the retries before the OK").allMatch(c -> c == Code.ABORTED || c == Code.DEADLINE_EXCEEDED);
    assertThat(MountTable.isMountPoint(stagingIdle)).as("unmounted").isFalse();
    assertThat(Multipath.system().map(wwidIdle)).as("its map flushed").isEmpty();
    assertThat(Iscsi.system().sessions()).as("logged out").noneMatch(s -> s.target().equals(iqnIdle));
    assertThat(Iscsi.system().nodes()).as("its node records deleted").noneMatch(r -> r.target().equals(iqnIdle));
    log("the idle volume unstaged after " + retries.size() + " more retries " + retries);
    // caravan inspect once every path is up and the node's own work is done. The guest's JVM is 10-25
    // times slower than a host's: the appliance evidence (several API requests) has been seen to miss the
    // inspector's 4 s while the unstage above still ran, so a late read is asked again, a few times.
    NomadScene.Inspection after = inspect();
    for (int again = 0; again < 3 && after.codes().equals(List.of("storage-not-answering")); again++) {
      Thread.sleep(1000);
      after = inspect();
    }
    assertThat(after.findings()).as("caravan inspect once every path is up: %s", after).isEmpty();
    FailoverConformance.assertAllLayersOk(after);
    assertThat(after.claims()).containsExactly(claim);

    // The task ends; Nomad unpublishes and unstages. Staged again, the volume shows what reached the target.
    long durable = task.stop();
    f.node.withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS).nodeUnpublishVolume(NodeUnpublishVolumeRequest
        .newBuilder().setVolumeId(busy.getVolumeId()).setTargetPath(targetBusy.toString()).build());
    unstage(busy, stagingBusy);
    stage(busy, stagingBusy, cap);
    assertThat(RecordLog.read(stagingBusy.resolve("records"))).as("every record fsynced, before, during and after")
        .isEqualTo(new RecordLog.Contents(durable, 0));
    unstage(busy, stagingBusy);
    for (Volume v : List.of(busy, idle)) {
      f.controller.withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS).controllerUnpublishVolume(
          ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).setNodeId(backend.nodeId()).build());
      assertThat(appliance.acl(v.getVolumeId())).as("no ACL entry").isEmpty();
      f.controller.withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS).deleteVolume(
          DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    }
    for (Volume v : List.of(busy, idle)) { // after both deletes: the LUN files' loop devices are listed for all
      assertThat(backend.leftoversOf(f.work, v.getVolumeContextMap())).as("what is left of %s", v.getVolumeId()).isEmpty();
    }
    assertThat(f.ourMounts()).isEmpty();
    assertThat(f.storageObjects()).isEmpty();
    log(durable + " records verified; both volumes gone, nothing left");
    FailoverReport.record(7, "qnap", "node side, both portals dark for " + Duration.ofNanos(healing - stalled)
        .toSeconds() + " s: Probe, stats (abnormal, naming each failed path and its portal) and a second publish"
        + " answered at once; the other volume's unstage ended DEADLINE_EXCEEDED by its deadline, its retry ABORTED,"
        + " and converged after the outage; the writer waited without failing and all " + durable + " fsynced"
        + " records reached the target (time: the portals' return to the writer's next durable record)", recovery);
  }

  private Volume createAndPublish(String name, VolumeCapability cap) {
    Volume v = f.controller.withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS).createVolume(CreateVolumeRequest
        .newBuilder().setName(name).addVolumeCapabilities(cap).setCapacityRange(Caps.bytes(1L << 30)).build())
        .getVolume();
    f.controller.withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS).controllerPublishVolume(
        ControllerPublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).setNodeId(backend.nodeId())
            .setVolumeCapability(cap).build());
    return v;
  }

  private void stage(Volume v, Path staging, VolumeCapability cap) {
    f.node.withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS).nodeStageVolume(NodeStageVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).setStagingTargetPath(staging.toString()).setVolumeCapability(cap)
        .putAllVolumeContext(v.getVolumeContextMap()).build());
  }

  private void unstage(Volume v, Path staging) {
    f.node.withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS).nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).setStagingTargetPath(staging.toString()).build());
  }

  private void publish(Volume v, Path staging, Path target, VolumeCapability cap) {
    publish(v, staging, target, cap, CALL_SECONDS);
  }

  private void publish(Volume v, Path staging, Path target, VolumeCapability cap, long seconds) {
    f.node.withDeadlineAfter(seconds, TimeUnit.SECONDS).nodePublishVolume(NodePublishVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
        .setVolumeCapability(cap).build());
  }

  private VolumeCondition stats(Volume v, Path path) {
    return f.node.withDeadlineAfter(ANSWER_SECONDS, TimeUnit.SECONDS).nodeGetVolumeStats(NodeGetVolumeStatsRequest
        .newBuilder().setVolumeId(v.getVolumeId()).setVolumePath(path.toString()).build()).getVolumeCondition();
  }

  /** Asks NodeGetVolumeStats (each answer within its deadline) until the condition is as {@code wanted}. */
  private VolumeCondition awaitCondition(Volume v, Path path, java.util.function.Predicate<VolumeCondition> wanted)
      throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (true) {
      VolumeCondition c = stats(v, path);
      if (wanted.test(c)) {
        return c;
      }
      assertThat(System.nanoTime()).as("the volume condition to change; last: %s", c).isLessThan(deadline);
      Thread.sleep(250);
    }
  }

  /** caravan inspect of the busy volume by its Nomad id; it answers within its bound, stalled target or not. */
  private NomadScene.Inspection inspect() throws java.io.IOException, InterruptedException {
    long start = System.nanoTime();
    NomadScene.Inspection chain = nomad.inspect(f);
    Duration took = Duration.ofNanos(System.nanoTime() - start);
    log("caravan inspect: " + chain.codes() + " in " + took.toMillis() + " ms");
    // Bounded: its storage reads wait 4 s at most; the rest takes seconds in the guest's slow JVM.
    assertThat(took).as("caravan inspect answers").isLessThan(Duration.ofSeconds(15));
    return chain;
  }

  private record Timed<T>(T value, Duration took) {}

  private static <T> Timed<T> timed(Supplier<T> call) {
    long start = System.nanoTime();
    T value = call.get();
    return new Timed<>(value, Duration.ofNanos(System.nanoTime() - start));
  }

  /** Where the guest's time goes, in the log: seconds since the test began. */
  private void log(String what) {
    System.out.printf("  %6.1f s  %s%n", (System.nanoTime() - started) / 1e9, what);
  }

  /** Drops every segment to and from each of {@code portals} until the outages are closed. */
  private void darken(List<String> portals) {
    for (String portal : portals) {
      outages.add(PortalOutage.drop(portal));
    }
  }
}
