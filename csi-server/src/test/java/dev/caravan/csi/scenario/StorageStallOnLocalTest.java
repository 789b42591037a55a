package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.code;
import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsResponse;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Failover mode 7 on the {@code local} backend: the ZFS pool under a published volume first suspends
 * (its disk fails every write; {@code failmode=wait}) and later stalls (its disk stops answering, so
 * transaction groups wait), in a pool of the test's own ({@link FaultyPool}), with the plugin driven
 * over its unix socket as Nomad drives it and a writer appending fsynced records to the volume
 * ({@link RecordLog}). One method, so that the guest boots the plugin and formats the volume once.
 */
class StorageStallOnLocalTest {
  /** Records the writer makes durable before the first fault, and after the last, before the test calls it recovered. */
  private static final int BEFORE = 20;
  private static final int AFTER = 20;
  private static final Duration WRITES = Duration.ofMinutes(2);
  /** Nomad's deadline for Probe (nomad-csi.md §11). */
  private static final long PROBE_SECONDS = 5;
  /**
   * For calls that must answer at once: Nomad gives controller calls 2 min, the test far less, so an
   * answer here is an answer, not a wait that happened to end.
   */
  private static final long ANSWER_SECONDS = 15;
  /** For a call the stalled pool holds: short, so that its answer is the caller's deadline, not a false OK. */
  private static final long STALLED_SECONDS = 3;

  /**
   * How long a caravan inspect may take while the pool is stuck: its storage reads wait 4 s at most,
   * and the rest (mountinfo, the journal, Nomad's API) takes seconds in the guest, where the JVM is
   * 10-25 times slower than on a host. A read that hung would take until the pool is back.
   */
  private static final Duration INSPECT_BOUND = Duration.ofSeconds(15);

  private FaultyPool pool;
  private PluginFixture f;
  private RecordLog.Writer task;
  /** Nomad, as it records the allocation that uses the volume (caravan inspect reads it). */
  private NomadScene nomad;

  @AfterEach
  void tearDown() throws IOException, InterruptedException {
    try {
      if (pool != null) {
        pool.recover(); // a test that failed mid-fault: nothing unmounts from a suspended pool
      }
      if (task != null) {
        task.close();
      }
      if (f != null) {
        f.close();
      }
    } finally {
      try {
        if (pool != null) {
          pool.close();
        }
      } finally {
        if (nomad != null) {
          nomad.close();
        }
      }
    }
  }

  /**
   * Suspended: CreateVolume, ControllerExpandVolume and CreateSnapshot answer UNAVAILABLE naming the
   * suspended pool, without waiting for it; Probe answers FAILED_PRECONDITION naming it within
   * Nomad's 5 s (the node's only pool cannot take a write: the plugin is not ready);
   * NodeGetVolumeStats reports the volume abnormal, naming the pool; the workload waits, as on any
   * stalled disk. Stalled: a CreateVolume that reached ZFS waits for its transaction group, and the
   * caller's deadline ends it (DEADLINE_EXCEEDED, never a false OK); its retry while the first still
   * waits is ABORTED or DEADLINE_EXCEEDED; Probe answers ready (the pool is ONLINE, its disk only
   * stalled). Once the disk is back, the workload resumes, the retried create returns the one zvol the first call made, every fsynced
   * record is there, and unpublish, unstage and delete leave nothing. Throughout, {@code caravan inspect}
   * (against Nomad's fake, which has the allocation running with the write claim) answers within its
   * bound: with the pool suspended it names the pool and the commands to run ({@code storage-abnormal}),
   * without calling the zvol it cannot read missing; before the faults and after them, no finding.
   */
  @Test
  void aSuspendedThenStalledPoolIsAnsweredWithinDeadlinesAndEverythingConverges() throws Exception {
    TestBackend.local().assumeAvailable();
    pool = FaultyPool.create(512 * MIB);
    nomad = new NomadScene(false);
    NomadScene.Node here = nomad.node("client-a", TestBackend.local(pool.name).nodeId());
    f = PluginFixture.start(TestBackend.local(pool.name), nomad.observe());
    VolumeCapability cap = Caps.mount("ext4");
    String id = create(CreateVolumeRequest.newBuilder().setName("in-use").addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(64 * MIB)).build(), 120);
    nomad.register("in-use", id);
    String alloc = nomad.place("a1", here, Optional.empty());
    Path staging = f.dir("staging/" + NomadScene.NAMESPACE + "/in-use/" + FailoverConformance.USAGE);
    Path target = f.dir("per-alloc/" + alloc + "/in-use").resolve(FailoverConformance.USAGE);
    f.stage(id, staging, cap);
    f.publish(id, staging, target, cap);
    nomad.claimedAndRunning(alloc);
    task = RecordLog.start(target.resolve("records"), 1);
    task.awaitDurable(BEFORE, WRITES);
    String claim = "write " + alloc + " running on " + here.nomadId();
    NomadScene.Inspection healthy = nomad.inspect(f); // also the first, slow in a cold JVM: not timed
    assertThat(healthy.findings()).as("caravan inspect before the faults: %s", healthy).isEmpty();
    FailoverConformance.assertAllLayersOk(healthy);

    pool.failWrites();
    pool.awaitHealth("SUSPENDED", Duration.ofSeconds(60)); // the writer's next transaction group fails
    long suspendedAt = task.durable();
    String suspended = pool.name + " on node " + PluginFixture.NODE + " is SUSPENDED";
    StatusRuntimeException probe = error(() -> f.identity.withDeadlineAfter(PROBE_SECONDS, TimeUnit.SECONDS)
        .probe(ProbeRequest.getDefaultInstance()));
    assertThat(probe.getStatus().getCode()).as("Probe of a node whose only pool is suspended")
        .isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(probe.getStatus().getDescription()).contains(pool.name + "=SUSPENDED");
    CreateVolumeRequest late = CreateVolumeRequest.newBuilder().setName("late").addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(64 * MIB)).build();
    assertUnavailable("CreateVolume on the suspended pool", suspended,
        () -> f.controller.withDeadlineAfter(ANSWER_SECONDS, TimeUnit.SECONDS).createVolume(late));
    assertUnavailable("ControllerExpandVolume on the suspended pool", suspended,
        () -> f.controller.withDeadlineAfter(ANSWER_SECONDS, TimeUnit.SECONDS).controllerExpandVolume(
            ControllerExpandVolumeRequest.newBuilder().setVolumeId(id).setCapacityRange(Caps.bytes(128 * MIB))
                .setVolumeCapability(cap).build()));
    assertUnavailable("CreateSnapshot on the suspended pool", suspended,
        () -> f.controller.withDeadlineAfter(ANSWER_SECONDS, TimeUnit.SECONDS).createSnapshot(
            CreateSnapshotRequest.newBuilder().setSourceVolumeId(id).setName("snap").build()));
    NodeGetVolumeStatsResponse stats = stats(id, target);
    assertThat(stats.getVolumeCondition().getAbnormal()).as("the volume's condition on a suspended pool").isTrue();
    assertThat(stats.getVolumeCondition().getMessage()).contains("pool " + pool.name + " is SUSPENDED");
    assertThat(task.durable()).as("the workload waits for its pool").isLessThanOrEqualTo(suspendedAt + 1);
    // caravan inspect names the pool and what to run; the zvol ZFS cannot read now is not called
    // missing (the backend layer is unknown or, from what ZFS still has, ok), and the stage, publish,
    // journal and Nomad's claim agree.
    NomadScene.Inspection stuck = inspect();
    assertThat(stuck.codes()).as("caravan inspect while the pool is suspended: %s", stuck)
        .containsExactly("storage-abnormal");
    assertThat(stuck.finding("storage-abnormal")).satisfies(x -> {
      assertThat(x.severity()).isEqualTo("error");
      assertThat(x.message()).contains(id).contains("pool " + pool.name + " is SUSPENDED");
      assertThat(x.next()).startsWith("zpool status -v " + pool.name + " ").contains("zpool clear " + pool.name);
    });
    assertThat(stuck.state("backend")).as("backend: %s", stuck).isIn("unknown", "ok");
    assertThat(stuck.state("attachment")).as("attachment: %s", stuck).isIn("unverified", "ok");
    assertThat(String.valueOf(stuck.evidence("attachment").get("storage_health")))
        .isEqualTo("pool " + pool.name + " is SUSPENDED");
    assertThat(List.of(stuck.mountStates("staging"), stuck.mountStates("published")))
        .containsExactly(List.of("ok"), List.of("ok"));
    assertThat(List.of(stuck.state("journal"), stuck.state("nomad"))).containsExactly("ok", "ok");
    assertThat(stuck.claims()).containsExactly(claim);

    pool.recover();
    long cleared = System.nanoTime();
    task.awaitDurable(suspendedAt + 1, WRITES);
    Duration resumed = Duration.ofNanos(System.nanoTime() - cleared);
    assertThat(f.identity.withDeadlineAfter(PROBE_SECONDS, TimeUnit.SECONDS).probe(ProbeRequest.getDefaultInstance())
        .getReady().getValue()).as("Probe once the pool is back").isTrue();

    pool.stall();
    assertThat(code(() -> f.controller.withDeadlineAfter(STALLED_SECONDS, TimeUnit.SECONDS).createVolume(late)))
        .as("a create the stalled pool holds").isEqualTo(Code.DEADLINE_EXCEEDED);
    assertThat(code(() -> f.controller.withDeadlineAfter(STALLED_SECONDS, TimeUnit.SECONDS).createVolume(late)))
        .as("its retry while the first still waits").isIn(Code.ABORTED, Code.DEADLINE_EXCEEDED);
    assertThat(f.identity.withDeadlineAfter(PROBE_SECONDS, TimeUnit.SECONDS).probe(ProbeRequest.getDefaultInstance())
        .getReady().getValue()).as("Probe of a stalled but ONLINE pool").isTrue();
    assertThat(stats(id, target).getVolumeCondition().getAbnormal()).as("a slow pool is no fault").isFalse();
    NomadScene.Inspection stalled = inspect();
    System.out.println("  caravan inspect while the disk is stalled: " + stalled.codes() + ", backend "
        + stalled.state("backend") + ", storage health " + stalled.evidence("attachment").get("storage_health"));
    // ZFS answers the inspector's reads from memory while its disk is stalled (so far, every layer agrees:
    // the stall shows only in the calls' deadlines); one that had to wait on the disk would be late.
    assertThat(stalled.codes()).as("caravan inspect while the pool's disk is stalled: %s", stalled)
        .isSubsetOf("storage-not-answering");
    stalled.findings().forEach(x -> assertThat(x.next()).isEqualTo("zpool status -v " + pool.name));
    assertThat(List.of(stalled.state("journal"), stalled.state("nomad"))).containsExactly("ok", "ok");

    pool.recover();
    long thawed = System.nanoTime();
    String created = retryWhileAborted(late);
    Duration recovery = Duration.ofNanos(System.nanoTime() - thawed);
    assertThat(f.storageObjects()).as("one zvol per name: the retry found what the first call made")
        .containsExactlyInAnyOrder(TestBackend.LocalTestBackend.dataset(id),
            TestBackend.LocalTestBackend.dataset(created));
    long total = task.durable() + AFTER;
    task.awaitDurable(total, WRITES);
    NomadScene.Inspection recovered = inspect();
    assertThat(recovered.findings()).as("caravan inspect once the disk is back: %s", recovered).isEmpty();
    FailoverConformance.assertAllLayersOk(recovered);
    assertThat(recovered.claims()).containsExactly(claim);
    total = task.stop();
    task = null;

    f.unpublish(id, target);
    f.unstage(id, staging);
    f.verifyAfterRestage(id, staging, cap, total);
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(created).build());
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(f.storageObjects()).isEmpty();
    assertThat(f.ourMounts()).isEmpty();

    FailoverReport.record(7, "local", "ZFS pool suspended (writes failing, failmode=wait): create, expand and"
        + " snapshot UNAVAILABLE naming the pool, Probe FAILED_PRECONDITION naming it, stats abnormal; the workload"
        + " waited (time: zpool clear to the workload's next durable record)", resumed);
    FailoverReport.record(7, "local", "ZFS pool stalled (its disk suspended in device-mapper): a create timed out, its retry was"
        + " ABORTED or timed out, never a false OK; Probe ready; after the stall the retried create found the first"
        + " call's zvol and every fsynced record was there (time: the stall's end to the retried create's answer)",
        recovery);
  }

  /** caravan inspect of the volume by its Nomad id, which answers within its bound however stuck the pool is. */
  private NomadScene.Inspection inspect() throws IOException, InterruptedException {
    long start = System.nanoTime();
    NomadScene.Inspection chain = nomad.inspect(f);
    assertThat(Duration.ofNanos(System.nanoTime() - start)).as("caravan inspect answers").isLessThan(INSPECT_BOUND);
    return chain;
  }

  private void assertUnavailable(String call, String why, org.junit.jupiter.api.function.Executable rpc) {
    StatusRuntimeException e = error(rpc);
    assertThat(e.getStatus().getCode()).as(call).isEqualTo(Code.UNAVAILABLE);
    assertThat(e.getStatus().getDescription()).as(call).contains(why);
  }

  /** CreateVolume as Nomad retries it: again while the plugin answers ABORTED (the first call still runs). */
  private String retryWhileAborted(CreateVolumeRequest request) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (true) {
      try {
        return create(request, 120);
      } catch (StatusRuntimeException e) {
        if (e.getStatus().getCode() != Code.ABORTED || System.nanoTime() > deadline) {
          throw e;
        }
        Thread.sleep(100);
      }
    }
  }

  private String create(CreateVolumeRequest request, long seconds) {
    return f.controller.withDeadlineAfter(seconds, TimeUnit.SECONDS).createVolume(request).getVolume().getVolumeId();
  }

  private NodeGetVolumeStatsResponse stats(String id, Path target) {
    return f.node.withDeadlineAfter(ANSWER_SECONDS, TimeUnit.SECONDS).nodeGetVolumeStats(
        NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id).setVolumePath(target.toString()).build());
  }
}
