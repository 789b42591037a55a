package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.code;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.Frozen;
import dev.caravan.storage.testing.HostRequirements;
import io.grpc.Status.Code;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@link FailoverConformance} on the file backend (sparse files on loop devices), and its mode 7. */
class FailoverConformanceOnFileTest extends FailoverConformance {
  /** Nomad's deadline for a CSI call is minutes; a short one here shows the answer is a timeout, not a false OK. */
  private static final long DEADLINE_SECONDS = 3;

  @Override
  TestBackend backend() {
    return TestBackend.file();
  }

  /** CreateVolume as Nomad retries it: again while the plugin answers ABORTED (the first call still runs). */
  private String retryWhileAborted(CreateVolumeRequest request) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (true) {
      try {
        return f.controller.withDeadlineAfter(60, TimeUnit.SECONDS).createVolume(request).getVolume().getVolumeId();
      } catch (io.grpc.StatusRuntimeException e) {
        if (e.getStatus().getCode() != Code.ABORTED || System.nanoTime() > deadline) {
          throw e;
        }
        Thread.sleep(100);
      }
    }
  }

  /**
   * Mode 7 on the file backend: its storage (the filesystem holding the volume images) stops
   * accepting writes. Calls that need it answer within the caller's deadline with a timeout, never a
   * false OK, and a retry while the first still waits is ABORTED; Probe answers throughout. The
   * workload on a published volume waits in the kernel, as it would on any stalled disk. Once the
   * storage is back, the retried create returns the one volume the first call made, and every record
   * the workload saw fsynced is there.
   */
  @Test
  void aStalledStorageDelaysCallsWithinTheirDeadlinesAndEverythingConverges() throws Exception {
    HostRequirements.assumeLoopAndExt4();
    f = PluginFixture.unstarted(backend());
    f.customize = nomad.observe();
    f.dataOnAFilesystemOfItsOwn();
    f.startPlugin();

    VolumeCapability cap = Caps.mount("ext4");
    InUse v = inUse("in-use", cap);
    String id = v.id();
    Path staging = v.staging();
    Path target = v.target();
    RecordLog.Writer task = v.task();

    CreateVolumeRequest late = CreateVolumeRequest.newBuilder().setName("late").addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(64 * MIB)).build();
    try (Frozen frozen = Filesystems.freeze(f.data)) {
      assertThat(code(() -> f.controller.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS).createVolume(late)))
          .as("a create the stalled storage holds").isEqualTo(Code.DEADLINE_EXCEEDED);
      assertThat(code(() -> f.controller.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS).createVolume(late)))
          .as("its retry while the first still waits").isIn(Code.ABORTED, Code.DEADLINE_EXCEEDED);
      assertThat(f.identity.withDeadlineAfter(DEADLINE_SECONDS, TimeUnit.SECONDS).probe(ProbeRequest.getDefaultInstance())
          .getReady().getValue()).isTrue();
      long stalledAt = task.durable();
      Thread.sleep(500);
      assertThat(task.durable()).as("the workload waits for its storage").isLessThanOrEqualTo(stalledAt + 1);
      // The inspector only reads: it answers while the storage is stalled, and for the volume in use
      // every layer agrees (the kernel holds the workload's writes; nothing is detached or unmounted).
      NomadScene.Inspection stalled = nomad.inspect(f);
      assertThat(stalled.findings()).as("caravan inspect while the storage is stalled: %s", stalled).isEmpty();
      assertAllLayersOk(stalled);
      assertThat(stalled.claims()).containsExactly("write " + v.alloc() + " running on " + here.nomadId());
    }
    long thawed = System.nanoTime();

    String created = retryWhileAborted(late);
    Duration recovery = Duration.ofNanos(System.nanoTime() - thawed);
    assertThat(f.controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
        .as("one volume per name: the retry found what the first call made")
        .filteredOn(e -> e.getVolume().getVolumeId().equals(created)).hasSize(1);
    assertThat(f.node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id)
        .setVolumePath(target.toString()).build()).getVolumeCondition().getAbnormal()).isFalse();
    long resumed = task.durable();
    task.awaitDurable(resumed + AFTER, WRITES);
    long total = task.stop();

    unpublish(id, target);
    unstage(id, staging);
    verifyAfterRestage(id, staging, cap, total);
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(created).build());
    deleteAndExpectNothingLeft(id);
    FailoverReport.record(7, backend().driver(), "storage stalled (data filesystem frozen): creates timed out or were"
        + " ABORTED, never a false OK; Probe answered; the workload waited; after the thaw the retried create found"
        + " the first call's volume and every fsynced record was there (time: the thaw to the retried create's answer)",
        recovery);
  }
}
