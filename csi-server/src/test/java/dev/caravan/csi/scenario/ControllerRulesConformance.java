package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.code;
import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.VolumeLocks;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.ControllerUnpublishVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.ListVolumesResponse;
import dev.caravan.csi.v1.NodeExpandVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.Snapshot;
import dev.caravan.csi.v1.Topology;
import dev.caravan.csi.v1.TopologyRequirement;
import dev.caravan.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.caravan.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeContentSource;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.function.Executable;

/**
 * The Controller rules every backend must keep: ids it could never have issued name nothing;
 * ValidateVolumeCapabilities compares the request with the volume; one lock key per object, shared
 * by its name, its id and the node service; a volume in use on the node is never deleted, whatever
 * its access type; and a snapshot is never a torn copy reported ready. Subclasses pick the backend
 * ({@link TestBackend}).
 */
abstract class ControllerRulesConformance {
  PluginFixture f;
  private final Map<String, Map<String, String>> contexts = new java.util.concurrent.ConcurrentHashMap<>();

  abstract TestBackend backend();

  /** Rounds of a retried create racing a delete of the same volume: 50 unless a backend says otherwise. */
  int raceRounds() {
    return 50;
  }

  @AfterEach
  void stop() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  // ---- rule 1: ids this backend could never have made are absent, not invalid -----------------

  /** Well-bounded ids that no object of this backend can have. */
  private List<String> neverIssued() {
    List<String> ids = new ArrayList<>(List.of(
        "../etc/passwd", "a/b", "Vol.1", ".", "..", "pvc-0f3a9c", "vol-abc", "snap-abc", "x\ny", "vol abc",
        "local/v2/" + PluginFixture.NODE + "/tank/caravan/vol-a"));
    // the other backend's ids
    ids.add(backend().driver().equals("file")
        ? "local/v1/" + PluginFixture.NODE + "/tank/caravan/vol-data-0123456789ab"
        : "vol-data-0123456789ab");
    return ids;
  }

  @Test
  void idsThisBackendNeverIssuesNameNothing() throws IOException {
    f = PluginFixture.start(backend());
    Volume real = createVolume("real", Caps.mount("ext4"));
    Set<String> before = f.storageObjects();
    Path staging = f.dir("staging/never/rw");
    Path target = f.root.resolve("per-alloc/never/rw");
    for (String id : neverIssued()) {
      // deleting what does not exist is done
      assertThat(code(() -> deleteVolume(id))).as(id).isEqualTo(Code.OK);
      assertThat(code(() -> f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(id).build())))
          .as(id).isEqualTo(Code.OK);
      // everything else: NOT_FOUND, naming the field
      assertNotFound(id, "volume_id", () -> f.controller.validateVolumeCapabilities(
          ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(id).addVolumeCapabilities(Caps.block()).build()));
      assertNotFound(id, "volume_id", () -> f.controller.controllerGetVolume(
          ControllerGetVolumeRequest.newBuilder().setVolumeId(id).build()));
      assertNotFound(id, "volume_id", () -> f.controller.controllerExpandVolume(
          ControllerExpandVolumeRequest.newBuilder().setVolumeId(id).setCapacityRange(Caps.bytes(64 * MIB)).build()));
      assertNotFound(id, "source_volume_id", () -> f.controller.createSnapshot(
          CreateSnapshotRequest.newBuilder().setSourceVolumeId(id).setName("never-snap").build()));
      assertNotFound(id, "volume_content_source.snapshot.snapshot_id", () -> f.controller.createVolume(
          create("from-never-snap", Caps.mount("ext4")).setVolumeContentSource(VolumeContentSource.newBuilder()
              .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(id))).build()));
      assertNotFound(id, "volume_content_source.volume.volume_id", () -> f.controller.createVolume(
          create("from-never-vol", Caps.mount("ext4")).setVolumeContentSource(VolumeContentSource.newBuilder()
              .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(id))).build()));
      // the node: the same, except that unstaging what was never staged is done
      assertNotFound(id, "volume_id", () -> f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
          .setStagingTargetPath(staging.toString()).setVolumeCapability(Caps.mount("ext4")).build()));
      assertNotFound(id, "volume_id", () -> f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id)
          .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
          .setVolumeCapability(Caps.mount("ext4")).build()));
      assertNotFound(id, "volume_id", () -> f.node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
          .setVolumeId(id).setVolumePath(staging.toString()).build()));
      assertNotFound(id, "volume_id", () -> f.node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder()
          .setVolumeId(id).setVolumePath(staging.toString()).build()));
      assertNotFound(id, "volume_id", () -> f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder()
          .setVolumeId(id).setTargetPath(target.toString()).build()));
      assertThat(code(() -> f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
          .setStagingTargetPath(staging.toString()).build()))).as(id).isEqualTo(Code.OK);
    }
    // nothing was touched: no storage object, no mount, nothing at the target
    assertThat(f.storageObjects()).isEqualTo(before);
    assertThat(volumeIds()).containsExactly(real.getVolumeId());
    assertThat(f.ourMounts()).isEmpty();
    assertThat(target.getParent()).doesNotExist();
    try (var entries = Files.list(staging)) {
      assertThat(entries).isEmpty();
    }
    deleteVolume(real.getVolumeId());
  }

  @Test
  void whatNoIdCanBeIsInvalid() throws IOException {
    f = PluginFixture.start(backend());
    Path staging = f.dir("staging/invalid/rw");
    for (String id : List.of("", "vol-a\u0000b", "v".repeat(129))) {
      assertInvalid(id, "volume_id", () -> deleteVolume(id));
      assertInvalid(id, "snapshot_id", () -> f.controller.deleteSnapshot(
          DeleteSnapshotRequest.newBuilder().setSnapshotId(id).build()));
      assertInvalid(id, "volume_id", () -> f.controller.controllerGetVolume(
          ControllerGetVolumeRequest.newBuilder().setVolumeId(id).build()));
      assertInvalid(id, "volume_id", () -> f.controller.validateVolumeCapabilities(
          ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(id).addVolumeCapabilities(Caps.block()).build()));
      assertInvalid(id, "source_volume_id", () -> f.controller.createSnapshot(
          CreateSnapshotRequest.newBuilder().setSourceVolumeId(id).setName("s").build()));
      assertInvalid(id, "volume_content_source.snapshot.snapshot_id", () -> f.controller.createVolume(
          create("from-invalid", Caps.mount("ext4")).setVolumeContentSource(VolumeContentSource.newBuilder()
              .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(id))).build()));
      assertInvalid(id, "volume_id", () -> f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
          .setStagingTargetPath(staging.toString()).setVolumeCapability(Caps.block()).build()));
      assertInvalid(id, "volume_id", () -> f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder()
          .setVolumeId(id).setStagingTargetPath(staging.toString()).build()));
    }
    assertThat(volumeIds()).isEmpty();
    assertThat(f.storageObjects()).isEmpty();
  }

  // ---- rule 2: ValidateVolumeCapabilities compares with what the volume is ----------------------

  @Test
  void validationConfirmsOnlyWhatTheVolumeIs() throws IOException {
    f = PluginFixture.start(backend());
    Volume ext4 = createVolume("valid-ext4", Caps.mount("ext4"));

    ValidateVolumeCapabilitiesResponse xfs = validate(ext4, Caps.mount("xfs"));
    assertThat(xfs.hasConfirmed()).isFalse();
    assertThat(xfs.getMessage()).contains("volume_capabilities[0].mount.fs_type").contains("xfs").contains("ext4");
    // one unsupported capability among supported ones: nothing is confirmed
    assertThat(validate(ext4, Caps.mount("ext4"), Caps.mount("xfs")).hasConfirmed()).isFalse();

    // mount access for its filesystem; block access only if CreateVolume asked for it
    ValidateVolumeCapabilitiesResponse ok = validate(ext4, Caps.mount("ext4"), Caps.mount(""));
    assertThat(ok.getConfirmed().getVolumeCapabilitiesList()).containsExactly(Caps.mount("ext4"), Caps.mount(""));
    assertThat(validate(ext4, Caps.mount("ext4"), Caps.block()).getMessage())
        .contains("volume_capabilities[1] asks for block access").contains("created for mount access only");
    assertThat(ok.getConfirmed().getParametersMap()).isEmpty();
    assertThat(ok.getConfirmed().getVolumeContextMap()).isEmpty();

    // parameters and volume_context: compared where the plugin knows them, and only those echoed
    ValidateVolumeCapabilitiesResponse withContext = f.controller.validateVolumeCapabilities(
        ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(ext4.getVolumeId())
            .addVolumeCapabilities(Caps.mount("ext4")).putParameters("fsType", "ext4")
            .putAllVolumeContext(ext4.getVolumeContextMap()).putVolumeContext("someone-elses", "x").build());
    assertThat(withContext.getConfirmed().getParametersMap()).isEqualTo(Map.of("fsType", "ext4"));
    assertThat(withContext.getConfirmed().getVolumeContextMap()).isEqualTo(ext4.getVolumeContextMap());
    ValidateVolumeCapabilitiesResponse wrongParameter = f.controller.validateVolumeCapabilities(
        ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(ext4.getVolumeId())
            .addVolumeCapabilities(Caps.block()).putParameters("fsType", "xfs").build());
    assertThat(wrongParameter.hasConfirmed()).isFalse();
    assertThat(wrongParameter.getMessage()).contains("parameters.fsType is xfs").contains("ext4");
    ValidateVolumeCapabilitiesResponse wrongContext = f.controller.validateVolumeCapabilities(
        ValidateVolumeCapabilitiesRequest.newBuilder().setVolumeId(ext4.getVolumeId())
            .addVolumeCapabilities(Caps.mount("")).putVolumeContext("fsType", "xfs").build());
    assertThat(wrongContext.hasConfirmed()).isFalse();
    assertThat(wrongContext.getMessage()).contains("volume_context.fsType is xfs");

    // an xfs volume, and one created for block access with the fsType parameter
    Volume xfsVolume = createVolume("valid-xfs", Caps.mount("xfs"));
    assertThat(validate(xfsVolume, Caps.mount("ext4")).hasConfirmed()).isFalse();
    assertThat(validate(xfsVolume, Caps.mount("xfs")).hasConfirmed()).isTrue();
    // created for both access types, with the fsType parameter
    Volume both = f.controller.createVolume(create("valid-both", Caps.block()).addVolumeCapabilities(Caps.mount(""))
        .putParameters("fsType", "xfs").setCapacityRange(Caps.bytes(backend().sizeFor("xfs"))).build()).getVolume();
    assertThat(validate(both, Caps.block(), Caps.mount("xfs")).hasConfirmed()).isTrue();
    assertThat(validate(both, Caps.mount("ext4")).getMessage()).contains("was created for xfs");
    // a volume created for block access only: never confirmed for a mount, whatever the filesystem
    Volume plain = createVolume("valid-plain", Caps.block());
    assertThat(validate(plain, Caps.block()).hasConfirmed()).isTrue();
    assertThat(validate(plain, Caps.mount("ext4")).getMessage()).contains("created for block access only");
    assertThat(validate(plain, Caps.mount("")).hasConfirmed()).isFalse();
    for (Volume v : List.of(ext4, xfsVolume, both, plain)) {
      deleteVolume(v.getVolumeId());
    }
  }

  /**
   * A volume is used only the ways CreateVolume was asked for: a block-only volume may hold raw data
   * that no probe recognizes, and a mount stage would format it. Every RPC that takes a capability
   * refuses another access type with the spec's code for an unsupported capability.
   */
  @Test
  void aVolumeIsUsedOnlyTheWaysItWasCreatedFor() throws IOException {
    backend().assumeNodeSide();
    f = PluginFixture.start(backend());
    Volume raw = createVolume("raw-only", Caps.block());
    String id = raw.getVolumeId();
    assertThat(raw.getVolumeContextMap()).containsEntry("access", "block");
    Path staging = f.dir("staging/raw-only/rw");
    Path target = f.dir("per-alloc/a1/raw-only").resolve("rw");
    stage(id, staging, Caps.block());
    publish(id, staging, target, Caps.block());
    writeAt(target, "raw data with no signature");
    release(id, staging, target);

    StatusRuntimeException mountStage = error(() -> f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder()
        .setVolumeId(id).setStagingTargetPath(staging.toString()).setVolumeCapability(Caps.mount("ext4"))
        .putAllVolumeContext(raw.getVolumeContextMap()).build()));
    assertThat(mountStage.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(mountStage.getStatus().getDescription()).contains("created for block access only");
    assertThat(code(() -> f.node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id)
        .setVolumePath(staging.toString()).build()))).as("the refused stage left nothing staged").isEqualTo(Code.NOT_FOUND);
    StatusRuntimeException repeat = error(() -> f.controller.createVolume(create("raw-only", Caps.mount("ext4")).build()));
    assertThat(repeat.getStatus().getCode()).isEqualTo(Code.ALREADY_EXISTS);
    assertThat(repeat.getStatus().getDescription()).contains("block access, not mount");
    StatusRuntimeException expand = error(() -> f.controller.controllerExpandVolume(ControllerExpandVolumeRequest
        .newBuilder().setVolumeId(id).setCapacityRange(Caps.bytes(raw.getCapacityBytes()))
        .setVolumeCapability(Caps.mount("ext4")).build()));
    assertThat(expand.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(expand.getStatus().getDescription()).contains("volume_capability asks for mount access");

    // the data is as it was: nothing formatted it
    stage(id, staging, Caps.block());
    publish(id, staging, target, Caps.block());
    assertThat(readAt(target, "raw data with no signature".length())).isEqualTo("raw data with no signature");
    release(id, staging, target);
    deleteVolume(id);
  }

  /**
   * A repeated CreateVolume whose requisite topology names another node: ALREADY_EXISTS where the
   * volume lives on one node (the requisite excludes it); where the volume is reachable from every node
   * (qnap's LUNs), the requisite includes it, so the repeat is the same volume and no node is named.
   */
  @Test
  void aRepeatWhoseRequisiteNamesAnotherNodeIsAlreadyExistsOnlyWhereTheVolumeIsNodeLocal() throws IOException {
    f = PluginFixture.start(backend());
    Volume v = createVolume("placed", Caps.mount("ext4"));
    if (!backend().nodeLocal()) {
      Volume again = f.controller.createVolume(create("placed", Caps.mount("ext4"))
          .setAccessibilityRequirements(TopologyRequirement.newBuilder().addRequisite(
              Topology.newBuilder().putSegments("caravan.csi/node", "another-node"))).build()).getVolume();
      assertThat(again.getVolumeId()).isEqualTo(v.getVolumeId());
      assertThat(again.getAccessibleTopologyList()).isEmpty();
      assertThat(volumeIds()).containsExactly(v.getVolumeId());
      deleteVolume(v.getVolumeId());
      return;
    }
    StatusRuntimeException e = error(() -> f.controller.createVolume(create("placed", Caps.mount("ext4"))
        .setAccessibilityRequirements(TopologyRequirement.newBuilder().addRequisite(
            Topology.newBuilder().putSegments("caravan.csi/node", "another-node"))).build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.ALREADY_EXISTS);
    assertThat(e.getStatus().getDescription()).contains("requisite does not include");
    // a new name with the same requisite: no volume here, and the answer says where to go
    StatusRuntimeException elsewhere = error(() -> f.controller.createVolume(create("placed-elsewhere", Caps.mount("ext4"))
        .setAccessibilityRequirements(TopologyRequirement.newBuilder().addRequisite(
            Topology.newBuilder().putSegments("caravan.csi/node", "another-node"))).build()));
    assertThat(elsewhere.getStatus().getCode())
        .isEqualTo(backend().driver().equals("local") ? Code.UNAVAILABLE : Code.RESOURCE_EXHAUSTED);
    assertThat(elsewhere.getStatus().getDescription()).contains("requisite").contains(PluginFixture.NODE);
    assertThat(volumeIds()).containsExactly(v.getVolumeId());
    deleteVolume(v.getVolumeId());
  }

  // ---- rule 3: one lock key per object, for its name, its id and the node ---------------------

  @Test
  void aHeldObjectIsAbortedWhicheverCallNamesIt() throws IOException {
    f = PluginFixture.start(backend());
    Volume v = createVolume("held", Caps.block());
    String id = v.getVolumeId();
    ControllerBackend backend = f.plugin().backend().controller();
    String key = VolumeLocks.volume(backend.volumeLockKey("held"));
    Path staging = f.dir("staging/held/rw");
    try (VolumeLocks.Held held = f.plugin().locks().acquire(key)) {
      List<Executable> calls = List.of(
          () -> f.controller.createVolume(create("held", Caps.block()).build()),
          () -> deleteVolume(id),
          () -> f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(id)
              .setCapacityRange(Caps.bytes(backend().sizeFor("ext4") * 2)).build()),
          () -> f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(id).setName("held-snap").build()),
          () -> f.controller.createVolume(create("held-clone", Caps.block()).setVolumeContentSource(VolumeContentSource
              .newBuilder().setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(id))).build()),
          () -> f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id)
              .setStagingTargetPath(staging.toString()).setVolumeCapability(Caps.block()).build()),
          () -> f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
              .setStagingTargetPath(staging.toString()).build()));
      for (Executable call : calls) {
        StatusRuntimeException e = error(call);
        assertThat(e.getStatus().getCode()).isEqualTo(Code.ABORTED);
        assertThat(e.getStatus().getDescription()).contains(key);
      }
      // other objects are not held up
      Volume free = createVolume("free", Caps.block());
      deleteVolume(free.getVolumeId());
    }
    assertThat(volumeIds()).containsExactly(id);
    assertThat(f.controller.listSnapshots(ListSnapshotsRequest.getDefaultInstance()).getEntriesList()).isEmpty();
    deleteVolume(id);
    assertThat(f.storageObjects()).isEmpty();
  }

  @Test
  void createRetriedWhileDeletingEndsWholeOrGone() throws Exception {
    f = PluginFixture.start(backend());
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      for (int round = 0; round < raceRounds(); round++) {
        String name = "race-" + round;
        String id = createVolume(name, Caps.block()).getVolumeId();
        deleteVolume(id);
        // the CO retries the create (it never saw an answer) while a delete of the same id runs
        CyclicBarrier start = new CyclicBarrier(2);
        AtomicBoolean created = new AtomicBoolean();
        Future<Code> create = pool.submit(() -> {
          start.await();
          try {
            return code(() -> createVolume(name, Caps.block()));
          } finally {
            created.set(true);
          }
        });
        Future<List<Code>> delete = pool.submit(() -> {
          start.await();
          List<Code> codes = new ArrayList<>();
          do {
            codes.add(code(() -> deleteVolume(id)));
          } while (!created.get());
          return codes;
        });
        assertThat(create.get(2, TimeUnit.MINUTES)).as("round %d create", round).isIn(Code.OK, Code.ABORTED);
        assertThat(delete.get(2, TimeUnit.MINUTES)).as("round %d deletes", round).allMatch(c -> c == Code.OK || c == Code.ABORTED);
        assertWholeOrGone(round, id);
        deleteVolume(id);
        assertThat(objectsOf(id)).as("round %d after the last delete", round).isEmpty();
      }
    } finally {
      pool.shutdownNow();
    }
  }

  /** Listed with all of its storage, or neither. */
  private void assertWholeOrGone(int round, String id) throws IOException {
    boolean listed = volumeIds().contains(id);
    Set<String> objects = objectsOf(id);
    if (listed) {
      assertThat(objects).as("round %d: a listed volume has all its storage", round).isEqualTo(whole(id));
    } else {
      assertThat(objects).as("round %d: an unlisted volume has no storage left", round).isEmpty();
    }
  }

  /** What the backend stores for one volume, as {@link TestBackend#storageObjects} names it. */
  private Set<String> whole(String id) {
    return switch (backend().driver()) {
      case "file" -> Set.of("volumes/" + id + ".img", "volumes/" + id + ".meta");
      case "qnap" -> Set.of("lun:" + leaf(id), "target:" + leaf(id)); // a LUN and its target, named alike
      default -> Set.of(id.substring(id.indexOf('/', "local/v1/".length()) + 1)); // the zvol's dataset
    };
  }

  private Set<String> objectsOf(String id) throws IOException {
    return f.storageObjects().stream().filter(o -> o.contains(leaf(id))).collect(Collectors.toCollection(TreeSet::new));
  }

  /** The last part of a volume id: what the backend names the volume's objects after. */
  private static String leaf(String id) {
    return id.substring(id.lastIndexOf('/') + 1);
  }

  // ---- rule 4: in use and published, from the node's journal, for every access type -----------

  @ParameterizedTest
  @ValueSource(strings = {"block", "mount"})
  void aVolumeInUseIsNeverDeletedAndIsReportedPublished(String access) throws IOException {
    backend().assumeNodeSide();
    f = PluginFixture.start(backend());
    VolumeCapability cap = access.equals("block") ? Caps.block() : Caps.mount("ext4");
    Volume v = createVolume("in-use-" + access, cap);
    String id = v.getVolumeId();
    Path staging = f.dir("staging/in-use/rw-" + access);
    Path target = f.dir("per-alloc/a1/in-use").resolve("rw-" + access);
    Set<String> storage = f.storageObjects();

    stage(id, staging, cap);
    assertRefusedInUse(id, staging.toString());
    assertPublishedHere(id);
    publish(id, staging, target, cap);
    assertRefusedInUse(id, target.toString());
    assertPublishedHere(id);
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString()).build());
    assertRefusedInUse(id, staging.toString());
    assertThat(f.storageObjects()).isEqualTo(storage);

    unstage(id, staging);
    assertThat(f.controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(id).build())
        .getStatus().getPublishedNodeIdsList()).isEmpty();
    deleteVolume(id);
    assertThat(objectsOf(id)).isEmpty();
  }

  private void assertRefusedInUse(String id, String where) {
    StatusRuntimeException e = error(() -> deleteVolume(id));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(e.getStatus().getDescription()).contains("volume_id").contains("in use").contains(where);
    assertThat(volumeIds()).contains(id);
  }

  private void assertPublishedHere(String id) {
    var got = f.controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(got.getStatus().getPublishedNodeIdsList()).containsExactly(backend().nodeId());
    ListVolumesResponse.Entry entry = f.controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList()
        .stream().filter(e -> e.getVolume().getVolumeId().equals(id)).findFirst().orElseThrow();
    assertThat(entry.getStatus().getPublishedNodeIdsList()).containsExactly(backend().nodeId());
    assertThat(entry.getStatus().getVolumeCondition().getAbnormal()).isFalse();
  }

  // ---- rule 5: a snapshot of a volume in block use is point-in-time, or refused ----------------

  @Test
  void aSnapshotOfAVolumeInBlockUseIsPointInTimeOrRefused() throws IOException {
    backend().assumeNodeSide();
    f = PluginFixture.start(backend());
    VolumeCapability cap = Caps.block();
    Volume v = createVolume("blk-src", cap);
    String id = v.getVolumeId();
    Path staging = f.dir("staging/blk-src/rw");
    Path target = f.dir("per-alloc/a1/blk-src").resolve("rw");
    stage(id, staging, cap);
    publish(id, staging, target, cap);
    writeAt(target, "before the snapshot");
    Set<String> storage = f.storageObjects();

    Snapshot s;
    try {
      s = f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(id).setName("blk-snap").build())
          .getSnapshot();
    } catch (StatusRuntimeException refused) {
      // only a backend that cannot take it at one instant may refuse, saying why and what to do
      assertThat(backend().driver()).isEqualTo("file");
      assertThat(refused.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
      assertThat(refused.getStatus().getDescription()).contains("source_volume_id").contains("block access")
          .contains("reflink").contains("NodeUnstageVolume");
      assertThat(f.storageObjects()).isEqualTo(storage);
      assertThat(f.controller.listSnapshots(ListSnapshotsRequest.getDefaultInstance()).getEntriesList()).isEmpty();
      release(id, staging, target);
      deleteVolume(id);
      return;
    }
    assertThat(s.getReadyToUse()).isTrue();
    writeAt(target, "after the snapshot!");
    Volume copy = created(f.controller.createVolume(create("blk-copy", cap).setVolumeContentSource(VolumeContentSource.newBuilder()
        .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(s.getSnapshotId()))).build()).getVolume());
    Path copyStaging = f.dir("staging/blk-copy/rw");
    Path copyTarget = f.dir("per-alloc/a2/blk-copy").resolve("rw");
    stage(copy.getVolumeId(), copyStaging, cap);
    publish(copy.getVolumeId(), copyStaging, copyTarget, cap);
    assertThat(readAt(copyTarget, "before the snapshot".length())).isEqualTo("before the snapshot");
    release(copy.getVolumeId(), copyStaging, copyTarget);
    release(id, staging, target);
    deleteVolume(copy.getVolumeId());
    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(s.getSnapshotId()).build());
    deleteVolume(id);
  }

  // ---- helpers ---------------------------------------------------------------------------------

  private static void assertNotFound(String id, String field, Executable call) {
    StatusRuntimeException e = error(call);
    assertThat(e.getStatus().getCode()).as(id).isEqualTo(Code.NOT_FOUND);
    assertThat(e.getStatus().getDescription()).as(id).startsWith(field + " ");
  }

  private static void assertInvalid(String id, String field, Executable call) {
    StatusRuntimeException e = error(call);
    assertThat(e.getStatus().getCode()).as(id).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(e.getStatus().getDescription()).as(id).startsWith(field + " ");
  }

  CreateVolumeRequest.Builder create(String name, VolumeCapability cap) {
    String fs = cap.hasMount() && !cap.getMount().getFsType().isEmpty() ? cap.getMount().getFsType() : "ext4";
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(backend().sizeFor(fs)));
  }

  Volume createVolume(String name, VolumeCapability cap) {
    return created(f.controller.createVolume(create(name, cap).build()).getVolume());
  }

  /** Keeps the context CreateVolume returned, which Nomad sends with every NodeStageVolume. */
  Volume created(Volume v) {
    contexts.put(v.getVolumeId(), v.getVolumeContextMap());
    return v;
  }

  void deleteVolume(String id) {
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
  }

  List<String> volumeIds() {
    return f.controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList().stream()
        .map(e -> e.getVolume().getVolumeId()).toList();
  }

  private ValidateVolumeCapabilitiesResponse validate(Volume v, VolumeCapability... caps) {
    return f.controller.validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).addAllVolumeCapabilities(List.of(caps)).build());
  }

  /** Stages as Nomad does: ControllerPublish to this node first where the backend fences, and the volume's context. */
  void stage(String id, Path staging, VolumeCapability cap) {
    if (backend().publishes()) {
      f.controller.controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id)
          .setNodeId(backend().nodeId()).setVolumeCapability(cap).build());
    }
    f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setVolumeCapability(cap).putAllVolumeContext(contexts.getOrDefault(id, Map.of())).build());
  }

  void publish(String id, Path staging, Path target, VolumeCapability cap) {
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setTargetPath(target.toString()).setVolumeCapability(cap).build());
  }

  /** Unstages as Nomad does: ControllerUnpublish from this node after, where the backend fences. */
  void unstage(String id, Path staging) {
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).build());
    if (backend().publishes()) {
      f.controller.controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id)
          .setNodeId(backend().nodeId()).build());
    }
  }

  void release(String id, Path staging, Path target) {
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString()).build());
    unstage(id, staging);
  }

  /** Writes {@code text} at offset 4096 of a block device bound at {@code target}, durably. */
  static void writeAt(Path target, String text) throws IOException {
    try (FileChannel ch = FileChannel.open(target, StandardOpenOption.WRITE, StandardOpenOption.DSYNC)) {
      ch.write(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)), 4096);
    }
  }

  static String readAt(Path target, int length) throws IOException {
    try (FileChannel ch = FileChannel.open(target, StandardOpenOption.READ)) {
      ByteBuffer back = ByteBuffer.allocate(length);
      ch.read(back, 4096);
      return new String(back.array(), StandardCharsets.UTF_8);
    }
  }
}
