package dev.caravan.csi.scenario;

import static dev.caravan.csi.testing.GrpcOutcomes.code;
import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.scenario.TestBackend.QnapTestBackend;
import dev.caravan.csi.backend.qnap.SimulatedAppliance;
import dev.caravan.csi.observe.inspect.Finding;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.ProbeResponse;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Mode 7 on qnap, the controller side on the host: the appliance (the simulator) slow beyond the
 * caller's deadline, answering 5xx, or refusing connections. Calls answer within the caller's
 * deadline with DEADLINE_EXCEEDED, UNAVAILABLE naming the appliance step, or ABORTED while an earlier
 * call for the volume still runs; never a false OK. A volume published before the outage keeps its
 * ACL throughout. Once the appliance is healthy, the CO's retries converge: one LUN per name, the ACL
 * as asked.
 */
class ApplianceFaultsOnQnapTest {
  private static final String WORKLOAD = "iqn.2026-01.dev.caravan.test:workload";
  /** Short, so that the test shows the answer comes by the deadline; Nomad's is 2 minutes for controller calls. */
  private static final long DEADLINE_MILLIS = 1500;
  /** Nomad's Probe deadline (nomad-csi.md §11). */
  private static final long PROBE_SECONDS = 5;

  private PluginFixture f;
  private SimulatedAppliance appliance;
  /** Nomad: the workload's node, and this plugin's node, where the controller runs. */
  private final NomadScene nomad;
  private final NomadScene.Node workload;
  private NomadScene.Node controllerNode;
  /** The allocation using the volume published before the outage, and that volume's id. */
  private String alloc;
  private String volumeInUse;

  ApplianceFaultsOnQnapTest() throws IOException {
    nomad = new NomadScene(true);
    workload = nomad.node("client-w", WORKLOAD);
  }

  @AfterEach
  void cleanUp() throws IOException {
    try {
      if (appliance != null) {
        appliance.heal();
      }
      if (f != null) {
        f.close();
      }
    } finally {
      nomad.close();
    }
  }

  private void start() throws IOException {
    f = PluginFixture.start(TestBackend.qnap(), nomad.observe());
    appliance = ((QnapTestBackend) f.backend).appliance(f.work);
    controllerNode = nomad.node("client-c", f.backend.nodeId());
    nomad.controllerOn(controllerNode, true);
  }

  private static CreateVolumeRequest create(String name) {
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(Caps.mount("ext4"))
        .setCapacityRange(Caps.bytes(1L << 30)).build();
  }

  private static ControllerPublishVolumeRequest publish(String volumeId) {
    return ControllerPublishVolumeRequest.newBuilder().setVolumeId(volumeId).setNodeId(WORKLOAD)
        .setVolumeCapability(Caps.mount("ext4")).build();
  }

  /** A volume made and published to the workload's node while the appliance was healthy, its allocation running. */
  private String publishedVolume() {
    String id = f.controller.createVolume(create("in-use")).getVolume().getVolumeId();
    nomad.register("in-use", id);
    alloc = nomad.place("w1", workload, java.util.Optional.empty());
    f.controller.controllerPublishVolume(publish(id));
    nomad.claimedAndRunning(alloc); // the node's stage and publish are the workload node's, not this plugin's
    assertThat(appliance.acl(id)).containsExactly(WORKLOAD);
    volumeInUse = id;
    return id;
  }

  private ProbeResponse probe() {
    return f.identity.withDeadlineAfter(PROBE_SECONDS, TimeUnit.SECONDS).probe(ProbeRequest.getDefaultInstance());
  }

  /** Probe answers FAILED_PRECONDITION, the spec's code for a plugin that is not healthy, saying why. */
  private void assertNotReady(String when, String why) {
    StatusRuntimeException e = error(this::probe);
    assertThat(e.getStatus().getCode()).as(when).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(e.getStatus().getDescription()).as(when).contains("not ready").contains(why);
  }

  /** A call, with the caller's short deadline, and how long it took to answer. */
  private record Timed(StatusRuntimeException error, Duration took) {}

  private Timed failing(java.util.function.Consumer<dev.caravan.csi.v1.ControllerGrpc.ControllerBlockingStub> call) {
    long t0 = System.nanoTime();
    StatusRuntimeException e = error(() -> call.accept(
        f.controller.withDeadlineAfter(DEADLINE_MILLIS, TimeUnit.MILLISECONDS)));
    return new Timed(e, Duration.ofNanos(System.nanoTime() - t0));
  }

  /** The CO's retry: again while the answer is ABORTED or UNAVAILABLE (both retryable for Nomad), for up to a minute. */
  private static <T> T retried(Supplier<T> call) throws InterruptedException {
    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (true) {
      try {
        return call.get();
      } catch (StatusRuntimeException e) {
        Code c = e.getStatus().getCode();
        if (!Set.of(Code.ABORTED, Code.UNAVAILABLE).contains(c) || System.nanoTime() > end) {
          throw e;
        }
        Thread.sleep(100);
      }
    }
  }

  /**
   * A finding about the appliance: a warning (the published volume's I/O does not go through the API)
   * naming the volume and {@code what} of the appliance's answer, whose next step is one request to the
   * appliance's URL, showing its status and time.
   */
  private void assertStorageFinding(Finding x, String what, String consequence) throws IOException {
    assertThat(x.severity()).isEqualTo("warning");
    assertThat(x.message()).contains(volumeInUse).contains(what).contains(consequence).contains("unknown, not absent");
    assertThat(x.next()).startsWith("curl -sS").contains("%{http_code}")
        .endsWith(appliance.options(List.of(), Map.of()).get("url") + "/");
  }

  /** caravan inspect once the appliance is back (and Nomad's probe of the controller passes): every layer agrees. */
  private void assertAgreesOnceBack() throws IOException, InterruptedException {
    NomadScene.Inspection back = nomad.inspect(f);
    assertThat(back.findings()).as("caravan inspect once the appliance is back: %s", back).isEmpty();
    assertThat(List.of(back.state("backend"), back.state("nomad"))).containsExactly("ok", "ok");
    assertThat(back.publishedTo()).as("the ACL, the workload's node: its claim's").contains(WORKLOAD);
  }

  @Test
  void aSlowApplianceIsAnsweredWithinTheDeadlineAndTheRetriesConverge() throws Exception {
    start();
    String inUse = publishedVolume();

    appliance.slow(Duration.ofMillis(2500));
    Timed first = failing(c -> c.createVolume(create("late")));
    assertThat(first.error().getStatus().getCode()).as("a create the slow appliance holds")
        .isEqualTo(Code.DEADLINE_EXCEEDED);
    assertThat(first.took()).as("answered by the caller's deadline").isLessThan(Duration.ofMillis(DEADLINE_MILLIS + 1000));
    Timed retry = failing(c -> c.createVolume(create("late")));
    assertThat(retry.error().getStatus().getCode()).as("its retry while the first still runs")
        .isIn(Code.ABORTED, Code.DEADLINE_EXCEEDED);
    assertThat(retry.took()).isLessThan(Duration.ofMillis(DEADLINE_MILLIS + 1000));
    // Probe asks the appliance for its firmware: 2.5 s late, still inside Probe's 4 s and Nomad's 5 s.
    assertThat(probe().getReady().getValue()).as("Probe of a slow appliance").isTrue();
    assertThat(appliance.acl(inUse)).as("the published volume's ACL").containsExactly(WORKLOAD);
    // caravan inspect: the appliance's evidence takes several requests, each 2.5 s late; the inspection
    // answers when its 4 s bound ends, saying the storage did not answer and how to see it (Nomad,
    // whose probes still pass, has nothing to add).
    long inspected = System.nanoTime();
    NomadScene.Inspection slow = nomad.inspect(f);
    assertThat(Duration.ofNanos(System.nanoTime() - inspected)).as("caravan inspect of a slow appliance answers")
        .isLessThan(Duration.ofSeconds(8));
    assertThat(slow.codes()).as("caravan inspect while the appliance is 2.5 s late: %s", slow)
        .containsExactly("storage-not-answering");
    assertStorageFinding(slow.finding("storage-not-answering"), "did not answer", "within 4 s");
    assertThat(slow.state("backend")).isEqualTo("unknown");
    assertThat(slow.claims()).containsExactly("write " + alloc + " running on " + workload.nomadId());
    // Later than that, Probe says so before Nomad's 5 s run out, rather than time out.
    appliance.slow(Duration.ofMillis(4500));
    long asked = System.nanoTime();
    assertNotReady("Probe of an appliance 4.5 s late", "did not answer within 4 s");
    assertThat(Duration.ofNanos(System.nanoTime() - asked)).isLessThan(Duration.ofMillis(4900));

    appliance.heal();
    long healed = System.nanoTime();
    String created = retried(() -> f.controller.withDeadlineAfter(60, TimeUnit.SECONDS).createVolume(create("late")))
        .getVolume().getVolumeId();
    Duration recovery = Duration.ofNanos(System.nanoTime() - healed);
    assertThat(appliance.luns()).as("one LUN per name").containsExactlyInAnyOrder(SimulatedAppliance.lunName(created),
        SimulatedAppliance.lunName(inUse));
    f.controller.controllerPublishVolume(publish(created));
    assertThat(appliance.acl(created)).containsExactly(WORKLOAD);
    assertThat(appliance.acl(inUse)).containsExactly(WORKLOAD);
    assertThat(probe().getReady().getValue()).isTrue();
    assertAgreesOnceBack();
    FailoverReport.record(7, "qnap", "appliance 2.5 s late on every request: creates answered DEADLINE_EXCEEDED by the"
        + " caller's deadline and their retry ABORTED or DEADLINE_EXCEEDED, never a false OK; Probe ready; the"
        + " published volume's ACL kept; once healthy the retried create found the first call's LUN (time: healthy"
        + " again to the retried create's answer)", recovery);
  }

  @Test
  void anApplianceAnswering5xxOrRefusingIsUnavailableAndTheRetriesConverge() throws Exception {
    start();
    String inUse = publishedVolume();

    appliance.failWith(503);
    Timed failed = failing(c -> c.createVolume(create("during")));
    assertThat(failed.error().getStatus().getCode()).as("a create while the appliance answers 503")
        .isEqualTo(Code.UNAVAILABLE);
    assertThat(failed.error().getStatus().getDescription()).as("names the appliance step and its answer")
        .contains("QNAP LUN list").contains("HTTP 503");
    Timed republish = failing(c -> c.controllerPublishVolume(publish(inUse)));
    assertThat(republish.error().getStatus().getCode()).as("a publish the appliance cannot confirm: no false OK")
        .isEqualTo(Code.UNAVAILABLE);
    assertNotReady("Probe while the appliance answers 503", "HTTP 503");
    // Nomad's health probe of the controller fails as the Probe above did. caravan inspect: the
    // appliance's error is shown, not read as an absent volume or attachment; Nomad's layer says
    // no controller can publish or unpublish.
    nomad.controllerOn(controllerNode, false);
    NomadScene.Inspection outage = nomad.inspect(f);
    assertThat(outage.codes()).as("caravan inspect while the appliance answers 503: %s", outage)
        .containsExactly("storage-unavailable", "nomad-plugin-no-healthy-controller");
    assertStorageFinding(outage.finding("storage-unavailable"), "HTTP 503", "answer UNAVAILABLE");
    assertThat(outage.finding("nomad-plugin-no-healthy-controller").next()).isEqualTo("nomad plugin status -verbose caravan");
    assertThat(outage.state("backend")).isEqualTo("unknown");
    assertThat(String.valueOf(outage.evidence("backend").get("error"))).contains("HTTP 503");
    assertThat(outage.claims()).containsExactly("write " + alloc + " running on " + workload.nomadId());

    appliance.refuseConnections();
    failed = failing(c -> c.createVolume(create("during")));
    assertThat(failed.error().getStatus().getCode()).as("a create while the appliance refuses connections")
        .isEqualTo(Code.UNAVAILABLE);
    assertThat(failed.error().getStatus().getDescription()).as("names the appliance step")
        .contains("QNAP LUN list").contains("did not answer").doesNotContain("Exception");
    assertThat(failed.took()).as("a refused connection fails at once").isLessThan(Duration.ofMillis(DEADLINE_MILLIS));
    assertNotReady("Probe while the appliance refuses connections", "did not answer");
    NomadScene.Inspection refused = nomad.inspect(f);
    assertThat(refused.codes()).as("caravan inspect while the appliance refuses connections: %s", refused)
        .containsExactly("storage-unavailable", "nomad-plugin-no-healthy-controller");
    assertStorageFinding(refused.finding("storage-unavailable"), "did not answer", "answer UNAVAILABLE");
    assertThat(refused.state("backend")).isEqualTo("unknown");
    assertThat(appliance.luns()).as("nothing was made during the outage").containsExactly(
        SimulatedAppliance.lunName(inUse));

    appliance.heal();
    long healed = System.nanoTime();
    String created = retried(() -> f.controller.withDeadlineAfter(60, TimeUnit.SECONDS).createVolume(create("during")))
        .getVolume().getVolumeId();
    Duration recovery = Duration.ofNanos(System.nanoTime() - healed);
    retried(() -> f.controller.withDeadlineAfter(60, TimeUnit.SECONDS).controllerPublishVolume(publish(created)));
    assertThat(appliance.luns()).as("one LUN per name").containsExactlyInAnyOrder(SimulatedAppliance.lunName(created),
        SimulatedAppliance.lunName(inUse));
    assertThat(appliance.acl(created)).containsExactly(WORKLOAD);
    assertThat(appliance.acl(inUse)).as("the published volume's ACL, kept through the outage").containsExactly(WORKLOAD);
    assertThat(code(() -> f.controller.controllerPublishVolume(publish(inUse)))).isEqualTo(Code.OK);
    assertThat(probe().getReady().getValue()).as("Probe once the appliance is back").isTrue();
    nomad.controllerOn(controllerNode, true);
    assertAgreesOnceBack();
    FailoverReport.record(7, "qnap", "appliance answering HTTP 503, then refusing connections: calls answered"
        + " UNAVAILABLE naming the appliance step, never a false OK; Probe not ready; the published volume's ACL kept;"
        + " once healthy the retried create and publish converged (time: healthy again to the retried create's"
        + " answer)", recovery);
  }
}
