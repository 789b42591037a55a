package dev.caravan.csi.scenario;

import static dev.caravan.csi.testing.GrpcOutcomes.code;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.scenario.TestBackend.QnapTestBackend;
import dev.caravan.csi.backend.qnap.SimulatedAppliance;
import dev.caravan.csi.support.CrashPoints;
import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.ControllerUnpublishVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.Snapshot;
import dev.caravan.csi.v1.Volume;
import dev.caravan.storage.testing.LoopbackPorts;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Mode 6 on qnap, the second-controller half: two controller instances, each a {@code caravan serve}
 * process of its own on its own socket with its own node id, both on one appliance (the simulator).
 * Instance A dies at a crash point of CreateVolume, ControllerPublish, CreateSnapshot or DeleteVolume
 * ({@link CrashPoints} halts it as SIGKILL would); the CO's retry of the very same call on instance B
 * finishes the operation. The appliance is then read directly: one LUN and one target per volume name,
 * one snapshot per snapshot name, the ACL exactly the node asked for; a second retry answers the same.
 *
 * <p>B is one process for the whole class and A one per crash point: each fork costs seconds here.
 * The crash points in {@link #CASES} are qnap's controller steps; {@link KillConformance}'s check that
 * every crash point in the sources has a case counts them as proved here.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ControllerFailoverOnQnapTest {
  /** B's node id: any initiator name; only the workload's node id ends up in an ACL. */
  static final String NODE_B = "iqn.2026-01.dev.caravan.test:controller-b";
  /** The node the workload runs on, which ControllerPublish admits. */
  static final String WORKLOAD = "iqn.2026-01.dev.caravan.test:workload";
  static final String OTHER = "iqn.2026-01.dev.caravan.test:other";

  /** The call a crash interrupts, retried unchanged on the other instance. */
  enum Call {
    CREATE,
    PUBLISH,
    SNAPSHOT,
    DELETE
  }

  record Kill(String step, Call call) {
    @Override
    public String toString() {
      return step;
    }
  }

  /** Every crash point of qnap's controller, in the order its call reaches them. */
  static final List<Kill> CASES = List.of(
      new Kill("qnap.create.after-lun", Call.CREATE),
      new Kill("qnap.create.after-target", Call.CREATE),
      new Kill("qnap.publish.after-allow", Call.PUBLISH),
      new Kill("qnap.snapshot.after-create", Call.SNAPSHOT),
      new Kill("qnap.delete.after-unmap", Call.DELETE),
      new Kill("qnap.delete.after-lun", Call.DELETE));

  static final List<String> STEPS = CASES.stream().map(Kill::step).toList();

  /** Nomad's deadline for a controller call it drives is 2 minutes; these answer in seconds. */
  private static final long CALL_SECONDS = 60;

  private PluginFixture a;
  private PluginFixture b;
  private ForkedPlugin instanceB;
  private SimulatedAppliance appliance;
  /** Nomad, whose task API instance B reads (it runs as a Nomad task would): the controllers and the workload. */
  private NomadScene nomad;
  private NomadScene.Node clientA;
  private NomadScene.Node workload;
  /** B's observe API, where {@code caravan inspect} asks. */
  private String inspectB;

  @BeforeAll
  void startInstanceB() throws IOException, InterruptedException {
    a = PluginFixture.unstarted(TestBackend.qnap());
    appliance = ((QnapTestBackend) a.backend).appliance(a.work);
    b = PluginFixture.unstarted(((QnapTestBackend) a.backend).secondNode(a.work, NODE_B));
    nomad = new NomadScene(true);
    clientA = nomad.node("client-a", a.backend.nodeId());
    NomadScene.Node clientB = nomad.node("client-b", NODE_B);
    workload = nomad.node("client-w", WORKLOAD);
    nomad.controllerOn(clientA, true);
    nomad.controllerOn(clientB, true);
    int port = LoopbackPorts.unused();
    instanceB = ForkedPlugin.start(b, "", "127.0.0.1:" + port, nomad.taskEnvironment());
    inspectB = "http://127.0.0.1:" + port;
    b.connect();
  }

  @AfterAll
  void stop() throws IOException, InterruptedException {
    try {
      if (instanceB != null) {
        instanceB.close();
      }
      if (b != null) {
        b.close();
      }
      if (a != null) {
        a.close();
      }
    } finally {
      if (nomad != null) {
        nomad.close();
      }
    }
  }

  Stream<Kill> cases() {
    return CASES.stream();
  }

  private ControllerGrpc.ControllerBlockingStub onB() {
    return b.controller.withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS);
  }

  private static CreateVolumeRequest create(String name) {
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(Caps.mount("ext4"))
        .setCapacityRange(Caps.bytes(1L << 30)).build();
  }

  private static ControllerPublishVolumeRequest publish(String volumeId, String node) {
    return ControllerPublishVolumeRequest.newBuilder().setVolumeId(volumeId).setNodeId(node)
        .setVolumeCapability(Caps.mount("ext4")).build();
  }

  private static DeleteVolumeRequest delete(String volumeId) {
    return DeleteVolumeRequest.newBuilder().setVolumeId(volumeId).build();
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("cases")
  void aControllerKilledMidCallIsFinishedByTheRetryOnAnotherInstance(Kill k) throws Exception {
    String name = "vol-" + k.step().replace('.', '-');
    Volume prepared = k.call() == Call.CREATE ? null : onB().createVolume(create(name)).getVolume();
    CreateSnapshotRequest snapshot = CreateSnapshotRequest.newBuilder().setName("snap-" + name)
        .setSourceVolumeId(prepared == null ? "" : prepared.getVolumeId()).build();
    Runnable call = switch (k.call()) {
      case CREATE -> () -> a.controller.createVolume(create(name));
      case PUBLISH -> () -> a.controller.controllerPublishVolume(publish(prepared.getVolumeId(), WORKLOAD));
      case SNAPSHOT -> () -> a.controller.createSnapshot(snapshot);
      case DELETE -> () -> a.controller.deleteVolume(delete(prepared.getVolumeId()));
    };

    long died;
    try (ForkedPlugin instanceA = ForkedPlugin.start(a, k.step())) {
      a.connect();
      a.controller = a.controller.withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS);
      expectDeathAt(k.step(), instanceA, call);
      died = System.nanoTime();
      a.disconnect();
    }

    switch (k.call()) {
      case CREATE -> {
        Volume first = onB().createVolume(create(name)).getVolume();
        Duration recovery = Duration.ofNanos(System.nanoTime() - died);
        expectOneVolume(first);
        Volume again = onB().createVolume(create(name)).getVolume();
        assertThat(again).as("a second retry answers the same volume").isEqualTo(first);
        expectOneVolume(first);
        report(k, recovery, "the retried CreateVolume on B made the volume A had begun: one LUN, one target, the LUN"
            + " mapped");
        onB().deleteVolume(delete(first.getVolumeId()));
      }
      case PUBLISH -> {
        String id = prepared.getVolumeId();
        // Nomad: the workload's allocation waits on its claim, whose ControllerPublish A died in (the
        // claim is recorded only once a publish answers); A's controller fails its health probe.
        nomad.register(name, id);
        String alloc = nomad.place(name, workload, java.util.Optional.empty());
        nomad.controllerOn(clientA, false);
        NomadScene.Inspection stuck = nomad.inspect(inspectB);
        assertThat(stuck.codes()).as("caravan inspect on B before the retry: %s", stuck)
            .containsExactly("nomad-plugin-controllers-degraded", "stale-attachment");
        assertThat(stuck.finding("nomad-plugin-controllers-degraded").message()).contains("1 healthy controllers of 2");
        assertThat(stuck.finding("nomad-plugin-controllers-degraded").next())
            .isEqualTo("nomad plugin status -verbose caravan");
        assertThat(stuck.finding("stale-attachment").message()).as("the ACL entry A wrote before it died")
            .contains(WORKLOAD).contains(workload.nomadId());
        assertThat(stuck.finding("stale-attachment").next()).isEqualTo(nomad.detach(workload));
        assertThat(stuck.publishedTo()).contains(WORKLOAD);
        assertThat(List.of(stuck.state("backend"), stuck.state("journal"))).containsExactly("ok", "absent");
        onB().controllerPublishVolume(publish(id, WORKLOAD));
        Duration recovery = Duration.ofNanos(System.nanoTime() - died);
        nomad.claimedAndRunning(alloc);
        NomadScene.Inspection retried = nomad.inspect(inspectB);
        assertThat(retried.codes()).as("caravan inspect on B after the retry: the claim matches the ACL; A is still"
            + " dead: %s", retried).containsExactly("nomad-plugin-controllers-degraded");
        assertThat(retried.claims()).containsExactly("write " + alloc + " running on " + workload.nomadId());
        nomad.controllerOn(clientA, true); // the next case's instance A
        assertThat(appliance.acl(id)).as("the target's ACL on the appliance").containsExactly(WORKLOAD);
        onB().controllerPublishVolume(publish(id, WORKLOAD));
        assertThat(appliance.acl(id)).as("the ACL after a second retry").containsExactly(WORKLOAD);
        assertThat(code(() -> onB().controllerPublishVolume(publish(id, OTHER))))
            .as("another node's publish: the fence holds").isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(appliance.acl(id)).containsExactly(WORKLOAD);
        report(k, recovery, "the retried ControllerPublish on B found the workload's node admitted and answered OK;"
            + " the ACL is exactly that node and still fences another");
        onB().controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id)
            .setNodeId(WORKLOAD).build());
        assertThat(appliance.acl(id)).isEmpty();
        onB().deleteVolume(delete(id));
      }
      case SNAPSHOT -> {
        Snapshot first = onB().createSnapshot(snapshot).getSnapshot();
        Duration recovery = Duration.ofNanos(System.nanoTime() - died);
        assertThat(appliance.snapshots()).as("snapshots on the appliance: the one A asked for").hasSize(1);
        Snapshot again = onB().createSnapshot(snapshot).getSnapshot();
        assertThat(again.getSnapshotId()).isEqualTo(first.getSnapshotId());
        assertThat(again.getReadyToUse()).isTrue();
        assertThat(appliance.snapshots()).as("snapshots after a second retry").hasSize(1);
        report(k, recovery, "the retried CreateSnapshot on B found the snapshot A had asked for: one snapshot");
        onB().deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(first.getSnapshotId()).build());
        onB().deleteVolume(delete(prepared.getVolumeId()));
      }
      case DELETE -> {
        onB().deleteVolume(delete(prepared.getVolumeId()));
        Duration recovery = Duration.ofNanos(System.nanoTime() - died);
        assertThat(appliance.objects()).as("the appliance after the retried delete").isEmpty();
        onB().deleteVolume(delete(prepared.getVolumeId()));
        report(k, recovery, "the retried DeleteVolume on B removed what A had left (the LUN and target, or the"
            + " target)");
      }
      default -> throw new AssertionError(k.call());
    }
    assertThat(appliance.objects()).as("the appliance once the case is taken down").isEmpty();
    assertThat(instanceB.exitStatus(0)).as("instance B still serves").isEmpty();
  }

  /** One LUN of the volume's name, its target, the LUN mapped there (the volume reports no abnormal condition). */
  private void expectOneVolume(Volume v) {
    String lun = SimulatedAppliance.lunName(v.getVolumeId());
    assertThat(appliance.luns()).as("LUNs on the appliance").containsExactly(lun);
    assertThat(appliance.objects()).as("objects on the appliance").containsExactly("lun:" + lun, "target:" + lun);
    assertThat(onB().controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build())
        .getStatus().getVolumeCondition().getAbnormal()).as("the volume's condition (its LUN mapped to its target)")
        .isFalse();
    assertThat(appliance.acl(v.getVolumeId())).as("a new volume's ACL").isEmpty();
  }

  private static void report(Kill k, Duration recovery, String outcome) {
    FailoverReport.record(6, "qnap", "controller A killed at " + k.step() + "; " + outcome + " (time: A's death to"
        + " B's answer)", recovery);
  }

  /** The call fails because A died, at {@code step}, with the status a CO sees of a dead plugin. */
  private static void expectDeathAt(String step, ForkedPlugin instanceA, Runnable call) throws InterruptedException {
    Status status;
    try {
      call.run();
      throw new AssertionError("crash point " + step + " was never reached: the call succeeded\n" + instanceA.log());
    } catch (StatusRuntimeException e) {
      status = e.getStatus();
    }
    OptionalInt exit = instanceA.exitStatus(30);
    assertThat(exit).as("crash point %s was never reached: the call answered %s\n%s", step, status, instanceA.log())
        .isPresent();
    assertThat(exit.getAsInt()).isEqualTo(CrashPoints.EXIT_STATUS);
    assertThat(instanceA.log()).contains("crash point " + step + " reached");
    assertThat(status.getCode()).as("what the CO sees of a controller that died").isEqualTo(Status.Code.UNAVAILABLE);
  }
}
