package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.code;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.GetCapacityRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.mount.MountTable;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Concurrent calls on one backend, as a CO that lost its state sends them (csi-spec-rules.md §1.5):
 * calls for one volume may be refused with ABORTED but never both succeed at cross purposes, and
 * calls for different volumes never wait for each other. Assertions are on outcomes and on the
 * storage the oracle sees, never on how long anything took.
 */
abstract class ConcurrencyConformance {
  private PluginFixture f;
  private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();

  /** The backend this suite runs on. */
  abstract TestBackend backend();

  /** How many volumes the node test drives at once (each thread stages, publishes, unpublishes, unstages one). */
  int parallelVolumes() {
    return 6;
  }

  /** Rounds of CreateVolume racing DeleteVolume. */
  int raceRounds() {
    return 50;
  }

  @BeforeEach
  void start() throws IOException {
    f = PluginFixture.start(backend());
  }

  @AfterEach
  void stop() throws IOException {
    threads.shutdownNow();
    if (f != null) {
      f.close();
    }
  }

  private CreateVolumeRequest request(String name, long bytes) {
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(Caps.mount("ext4"))
        .setCapacityRange(Caps.bytes(bytes)).build();
  }

  /** A volume id, or the gRPC code the call failed with. */
  private Object createOutcome(CreateVolumeRequest req) {
    try {
      return f.controller.createVolume(req).getVolume().getVolumeId();
    } catch (StatusRuntimeException e) {
      return e.getStatus().getCode();
    }
  }

  private List<String> listed() {
    return f.controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList().stream()
        .map(e -> e.getVolume().getVolumeId()).toList();
  }

  /** How many storage objects one plain volume is, for this backend (image and record; one zvol). */
  private int objectsPerVolume() throws IOException {
    String id = f.controller.createVolume(request("reference", 16 * MIB)).getVolume().getVolumeId();
    int n = f.storageObjects().size();
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(f.storageObjects()).isEmpty();
    return n;
  }

  private static <T> List<T> all(List<Future<T>> futures) throws InterruptedException, ExecutionException {
    List<T> out = new ArrayList<>();
    for (Future<T> fu : futures) {
      try {
        out.add(fu.get(10, TimeUnit.MINUTES));
      } catch (java.util.concurrent.TimeoutException e) {
        throw new AssertionError("a call did not return within 10 minutes", e);
      }
    }
    return out;
  }

  @Test
  void aHundredConcurrentCreatesOfOneNameGiveOneVolumeAndOneId() throws Exception {
    int perVolume = objectsPerVolume();
    int calls = 100;
    CyclicBarrier go = new CyclicBarrier(calls);
    List<Future<Object>> futures = new ArrayList<>();
    for (int i = 0; i < calls; i++) {
      futures.add(threads.submit(() -> {
        go.await();
        return createOutcome(request("racy", 64 * MIB));
      }));
    }
    List<Object> outcomes = all(futures);
    List<String> ids = outcomes.stream().filter(String.class::isInstance).map(String.class::cast).distinct().toList();
    assertThat(outcomes.stream().filter(o -> !(o instanceof String)))
        .as("the only refusal allowed for a concurrent repeat is ABORTED").allMatch(c -> c == Code.ABORTED);
    assertThat(ids).as("every call that succeeded got the same volume").hasSize(1);
    assertThat(listed()).containsExactlyElementsOf(ids);
    assertThat(f.storageObjects()).as("one volume's worth of storage").hasSize(perVolume);
    assertThat(f.backend.storedSize(f.work, ids.getFirst())).isEqualTo(64 * MIB);
    // a retry after the storm is answered from the existing volume
    assertThat(createOutcome(request("racy", 64 * MIB))).isEqualTo(ids.getFirst());
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(ids.getFirst()).build());
    assertThat(f.storageObjects()).isEmpty();
  }

  /**
   * Rounds of CreateVolume racing DeleteVolume for the same volume (50 unless a backend says
   * otherwise): whichever order they run in, each round ends with the volume either whole (listed,
   * readable, its full storage present) or entirely gone (nothing listed, nothing stored), never half
   * of either.
   */
  @Test
  void createRacingDeleteEndsEveryRoundWholeOrGone() throws Exception {
    int perVolume = objectsPerVolume();
    CreateVolumeRequest req = request("churn", 32 * MIB);
    String id = f.controller.createVolume(req).getVolume().getVolumeId();
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    for (int round = 0; round < raceRounds(); round++) {
      CyclicBarrier go = new CyclicBarrier(2);
      Future<Object> create = threads.submit(() -> {
        go.await();
        return createOutcome(req);
      });
      Future<Code> delete = threads.submit(() -> {
        go.await();
        return code(() -> f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build()));
      });
      Object created = create.get(5, TimeUnit.MINUTES);
      Code deleted = delete.get(5, TimeUnit.MINUTES);
      String at = "round " + round + " (create: " + created + ", delete: " + deleted + ")";
      assertThat(created).as(at).isIn(id, Code.ABORTED);
      assertThat(deleted).as(at).isIn(Code.OK, Code.ABORTED);
      Set<String> stored = f.storageObjects();
      Code get = code(() -> f.controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(id).build()));
      if (listed().contains(id)) {
        assertThat(get).as(at + ": listed, so readable").isEqualTo(Code.OK);
        assertThat(stored).as(at + ": listed, so whole").hasSize(perVolume);
        if (round % 10 == 0) { // a size read is one more process per round on ZFS; the object set is the point
          assertThat(f.backend.storedSize(f.work, id)).as(at).isEqualTo(32 * MIB);
        }
      } else {
        assertThat(get).as(at + ": not listed, so gone").isEqualTo(Code.NOT_FOUND);
        assertThat(stored).as(at + ": not listed, so nothing stored").isEmpty();
      }
    }
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(f.storageObjects()).isEmpty();
    assertThat(listed()).isEmpty();
  }

  private void stage(String id, Path staging, VolumeCapability cap) {
    f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(cap).build());
  }

  private void publish(String id, Path staging, Path target, VolumeCapability cap) {
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).setVolumeCapability(cap).build());
  }

  private void unpublish(String id, Path target) {
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString()).build());
  }

  private void unstage(String id, Path staging) {
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).build());
  }

  /** One volume's whole node cycle; the code of the first step that failed, else OK. */
  private Code cycle(String id, Path staging, Path target, VolumeCapability cap) {
    for (var step : List.<org.junit.jupiter.api.function.Executable>of(
        () -> stage(id, staging, cap),
        () -> publish(id, staging, target, cap),
        () -> Files.writeString(target.resolve("owner"), id),
        () -> assertThat(staging.resolve("owner")).hasContent(id),
        () -> unpublish(id, target),
        () -> unstage(id, staging))) {
      Code c = code(step);
      if (c != Code.OK) {
        return c;
      }
    }
    return Code.OK;
  }

  @Test
  void nodeCallsOnDifferentVolumesRunTogetherAndNoneIsAborted() throws Exception {
    VolumeCapability cap = Caps.mount("ext4");
    int n = parallelVolumes();
    List<String> ids = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      ids.add(f.controller.createVolume(request("parallel-" + i, 32 * MIB)).getVolume().getVolumeId());
    }
    CyclicBarrier go = new CyclicBarrier(n);
    List<Future<Code>> futures = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      String id = ids.get(i);
      Path staging = f.dir("staging/parallel-" + i + "/rw");
      Path target = f.dir("per-alloc/a" + i + "/parallel-" + i).resolve("rw");
      futures.add(threads.submit(() -> {
        go.await();
        return cycle(id, staging, target, cap);
      }));
    }
    assertThat(all(futures)).as("each volume's stage, publish, unpublish, unstage").containsOnly(Code.OK);
    assertThat(f.ourMounts()).isEmpty();
    assertThat(f.backend.attachedDevices(f.work)).isEmpty();
    for (String id : ids) {
      f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    }
  }

  /**
   * While volume A's first stage formats a large filesystem (real work: mkfs zeroes a big journal),
   * volume B, already staged, is published and unpublished over and over. Calls for B must neither be
   * refused nor queue behind A: at least one publish of B completes while A's stage is still running.
   */
  @Test
  void aSlowStageOfOneVolumeDoesNotHoldUpPublishOfAnother() throws Exception {
    VolumeCapability cap = Caps.mount("ext4");
    long room = f.controller.getCapacity(GetCapacityRequest.getDefaultInstance()).getAvailableCapacity();
    long big = Math.min(f.backend.slowFormatBytes(), room / 2) / MIB * MIB;
    String a = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("slow-a")
        .addVolumeCapabilities(cap).setCapacityRange(Caps.bytes(big))
        .putAllParameters(f.backend.sparseParameters()).build()).getVolume().getVolumeId();
    String b = f.controller.createVolume(request("quick-b", 32 * MIB)).getVolume().getVolumeId();
    Path stagingA = f.dir("staging/slow-a/rw");
    Path stagingB = f.dir("staging/quick-b/rw");
    Path targetB = f.dir("per-alloc/b/quick-b").resolve("rw");
    stage(b, stagingB, cap);

    Future<Code> stageA = threads.submit(() -> code(() -> stage(a, stagingA, cap)));
    int publishesDuringA = 0;
    List<Code> codesB = new ArrayList<>();
    while (!stageA.isDone()) {
      codesB.add(code(() -> publish(b, stagingB, targetB, cap)));
      if (!stageA.isDone()) {
        publishesDuringA++;
      }
      codesB.add(code(() -> unpublish(b, targetB)));
    }
    assertThat(stageA.get()).isEqualTo(Code.OK);
    assertThat(MountTable.isMountPoint(stagingA)).isTrue();
    assertThat(codesB).as("B's publishes and unpublishes").containsOnly(Code.OK);
    assertThat(publishesDuringA).as("publishes of B that finished while A's stage (%d bytes) ran", big).isPositive();

    unstage(a, stagingA);
    unstage(b, stagingB);
    assertThat(f.ourMounts()).isEmpty();
    for (String id : List.of(a, b)) {
      f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    }
  }
}
