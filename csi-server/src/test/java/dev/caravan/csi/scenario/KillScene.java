package dev.caravan.csi.scenario;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.ControllerUnpublishVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.NodeExpandVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsResponse;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeContentSource;
import dev.caravan.csi.v1.VolumeUsage;
import dev.caravan.storage.mount.MountTable;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.stream.Stream;

/**
 * The CSI objects one kill case makes (volumes, snapshots, stagings, publications), each driven and
 * recorded by name through a fixture's plugin, so that the case can check them and take everything
 * down again through the CSI API alone. A call is recorded only when it succeeds: a call that died
 * with its plugin is simply made again, the same, as a CO would.
 */
final class KillScene {
  static final String PAYLOAD_FILE = "payload.bin";

  private final PluginFixture f;
  private final VolumeCapability cap;
  private final boolean block;
  private final long size;
  private final byte[] payload;
  private final Map<String, Volume> volumes = new LinkedHashMap<>();
  private final Map<String, String> snapshots = new LinkedHashMap<>();
  private final Map<String, Path> staged = new LinkedHashMap<>();
  private final Map<String, Path> published = new LinkedHashMap<>();
  /** Volumes ControllerPublished to this node, on a backend whose fence that is (qnap). */
  private final java.util.Set<String> fenced = new java.util.LinkedHashSet<>();
  /** The context of every volume the scene ever made, for the backend's check that nothing of it is left. */
  private final List<Map<String, String>> contexts = new ArrayList<>();

  /** The passphrase of the encrypted cases' volumes. */
  static final String PASSPHRASE = "kill-scene passphrase";

  /** The passphrase {@link #rotatePassphrase} sets. */
  static final String ROTATED_PASSPHRASE = "kill-scene rotated passphrase";

  private final boolean encrypted;
  private boolean rotating;

  KillScene(PluginFixture f, boolean block, long seed) {
    this(f, block, false, seed);
  }

  KillScene(PluginFixture f, boolean block, boolean encrypted, long seed) {
    this.f = f;
    this.block = block;
    this.encrypted = encrypted;
    this.cap = block ? Caps.block() : Caps.mount("ext4");
    this.size = f.backend.sizeFor("ext4");
    this.payload = new byte[64 * 1024];
    new Random(seed).nextBytes(payload);
  }

  // ---- controller ----------------------------------------------------------------------------

  void create(String name) {
    create(name, Optional.empty());
  }

  void cloneOfVolume(String name, String source) {
    create(name, Optional.of(VolumeContentSource.newBuilder()
        .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(id(source))).build()));
  }

  void cloneOfSnapshot(String name, String snapshot) {
    create(name, Optional.of(VolumeContentSource.newBuilder()
        .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snapshotId(snapshot))).build()));
  }

  private void create(String name, Optional<VolumeContentSource> source) {
    CreateVolumeRequest.Builder req = CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(size)).putAllSecrets(secrets());
    if (encrypted()) {
      req.putParameters("encryption", "on");
    }
    source.ifPresent(req::setVolumeContentSource);
    Volume v = f.controller.createVolume(req.build()).getVolume();
    volumes.put(name, v);
    contexts.add(v.getVolumeContextMap());
  }

  void delete(String name) {
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id(name)).build());
    volumes.remove(name);
  }

  void snapshot(String name, String of) {
    snapshots.put(name, f.controller.createSnapshot(CreateSnapshotRequest.newBuilder().setName(name)
        .setSourceVolumeId(id(of)).build()).getSnapshot().getSnapshotId());
  }

  void deleteSnapshot(String name) {
    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snapshotId(name)).build());
    snapshots.remove(name);
  }

  /** The plugin lists exactly the volumes this scene holds, each at least as large as asked. */
  void expectListed() {
    List<Volume> listed = f.controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList().stream()
        .map(e -> e.getVolume()).toList();
    assertThat(listed).extracting(Volume::getVolumeId)
        .containsExactlyInAnyOrderElementsOf(volumes.values().stream().map(Volume::getVolumeId).toList());
    assertThat(listed).allSatisfy(v -> assertThat(v.getCapacityBytes()).isGreaterThanOrEqualTo(size));
    assertThat(f.controller.listSnapshots(ListSnapshotsRequest.getDefaultInstance()).getEntriesList())
        .allSatisfy(e -> assertThat(e.getSnapshot().getReadyToUse()).isTrue())
        .extracting(e -> e.getSnapshot().getSnapshotId())
        .containsExactlyInAnyOrderElementsOf(snapshots.values());
  }

  // ---- node ----------------------------------------------------------------------------------

  Path staging(String name) throws IOException {
    return f.dir("staging/" + name);
  }

  /** Nomad creates the target's parent; the target itself is the plugin's to create and remove. */
  Path target(String name) throws IOException {
    return f.dir("per-alloc/" + name).resolve(block ? "block" : "rw");
  }

  /**
   * Stages as Nomad does: where ControllerPublish is the fence, the controller admits this node first
   * (once: a stage whose plugin died after it is retried without it, as Nomad retries only the stage).
   */
  void stage(String name) throws IOException {
    Volume v = volume(name);
    fence(name, v);
    NodeStageVolumeRequest.Builder req = NodeStageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .putAllVolumeContext(v.getVolumeContextMap()).setStagingTargetPath(staging(name).toString())
        .setVolumeCapability(cap).putAllSecrets(secrets());
    f.node.nodeStageVolume(req.build());
    staged.put(name, staging(name));
  }

  /** Where ControllerPublish is the fence (qnap), admits this node to {@code name} unless it is already. */
  private void fence(String name, Volume v) {
    if (f.backend.publishes() && !fenced.contains(name)) {
      f.controller.controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
          .setNodeId(f.backend.nodeId()).setVolumeCapability(cap).build());
      fenced.add(name);
    }
  }

  /** Whether this case's volumes are encrypted: an encrypted case, or a backend that encrypts every volume. */
  private boolean encrypted() {
    return encrypted || f.backend.encrypted();
  }

  /**
   * The stage and create secrets: the passphrase of an encrypted volume, else none; once {@link
   * #rotatePassphrase} was called, {@link #ROTATED_PASSPHRASE} with the first one as the previous.
   */
  private Map<String, String> secrets() {
    if (!encrypted()) {
      return Map.of();
    }
    String first = encrypted ? PASSPHRASE : TestBackend.ENCRYPTION_PASSPHRASE;
    return rotating
        ? Map.of("encryptionPassphrase", ROTATED_PASSPHRASE, "encryptionPassphrasePrevious", first)
        : Map.of("encryptionPassphrase", first);
  }

  /**
   * From now on the stage secrets rotate the volumes' passphrase: {@link #ROTATED_PASSPHRASE} under
   * {@code encryptionPassphrase}, the one they were made with under {@code encryptionPassphrasePrevious}.
   */
  void rotatePassphrase() {
    rotating = true;
  }

  /**
   * The unstaged volume {@code name} refuses a stage with only the passphrase it was made with
   * (UNAUTHENTICATED): the rotation took, and nothing is left staged by the refusal. Where
   * ControllerPublish is the fence, the node is admitted first, so that the refusal is the
   * passphrase's and not the fence's.
   */
  void expectFirstPassphraseRefused(String name) throws IOException {
    Volume v = volume(name);
    fence(name, v);
    String first = encrypted ? PASSPHRASE : TestBackend.ENCRYPTION_PASSPHRASE;
    NodeStageVolumeRequest req = NodeStageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .putAllVolumeContext(v.getVolumeContextMap()).setStagingTargetPath(staging(name).toString())
        .setVolumeCapability(cap).putSecrets("encryptionPassphrase", first).build();
    assertThatThrownBy(() -> f.node.nodeStageVolume(req))
        .isInstanceOfSatisfying(StatusRuntimeException.class,
            e -> assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED));
    assertThat(MountTable.isMountPoint(staging(name))).as("staging path mounted").isFalse();
  }

  void publish(String name) throws IOException {
    Volume v = volume(name);
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .putAllVolumeContext(v.getVolumeContextMap()).setStagingTargetPath(staging(name).toString())
        .setTargetPath(target(name).toString()).setVolumeCapability(cap).build());
    published.put(name, target(name));
  }

  void unpublish(String name) throws IOException {
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id(name))
        .setTargetPath(target(name).toString()).build());
    published.remove(name);
  }

  /** Unstages as Nomad does: where ControllerPublish is the fence, ControllerUnpublish follows the unstage. */
  void unstage(String name) throws IOException {
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id(name))
        .setStagingTargetPath(staging(name).toString()).build());
    staged.remove(name);
    if (fenced.remove(name)) {
      f.controller.controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id(name))
          .setNodeId(f.backend.nodeId()).build());
    }
  }

  /** The volume is mounted at its staging path (mount access); block access has nothing there. */
  void expectStaged(String name) throws IOException {
    assertThat(MountTable.isMountPoint(staging(name))).as("staging path mounted").isEqualTo(!block);
  }

  void expectNotStaged(String name) throws IOException {
    assertThat(MountTable.isMountPoint(staging(name))).as("staging path mounted").isFalse();
    assertThat(f.ourLoops()).as("loop devices of the data directory").isEmpty();
  }

  /**
   * Published and healthy, and the node knows the volume's device: NodeExpandVolume (asking for the
   * size it has, so nothing grows) answers the whole volume, which it reads from the device the node
   * journal recorded at stage.
   */
  void expectPublished(String name) throws IOException {
    Path target = target(name);
    long capacity = volume(name).getCapacityBytes();
    assertThat(MountTable.isMountPoint(target)).as("target mounted").isTrue();
    NodeGetVolumeStatsResponse stats = f.node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder()
        .setVolumeId(id(name)).setVolumePath(target.toString()).build());
    assertThat(stats.getVolumeCondition().getAbnormal()).as(stats.getVolumeCondition().getMessage()).isFalse();
    VolumeUsage bytes = stats.getUsageList().stream().filter(u -> u.getUnit() == VolumeUsage.Unit.BYTES)
        .findFirst().orElseThrow();
    assertThat(bytes.getTotal()).isPositive().isLessThanOrEqualTo(capacity);
    assertThat(f.node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(id(name))
        .setVolumePath(target.toString()).setCapacityRange(Caps.bytes(capacity)).setVolumeCapability(cap).build())
        .getCapacityBytes()).as("device size the node reports for " + name).isEqualTo(capacity);
  }

  void expectNotPublished(String name) throws IOException {
    assertThat(MountTable.isMountPoint(target(name))).as("target mounted").isFalse();
    assertThat(target(name)).as("the target the plugin created").doesNotExist();
  }

  // ---- data ----------------------------------------------------------------------------------

  /** Writes the payload through the published target, durably: what a snapshot or clone must then hold. */
  void writePayload(String name) throws IOException {
    Path at = block ? target(name) : target(name).resolve(PAYLOAD_FILE);
    try (FileChannel ch = FileChannel.open(at, StandardOpenOption.WRITE, StandardOpenOption.CREATE)) {
      ch.write(ByteBuffer.wrap(payload), 0);
      ch.force(true);
    }
    if (!block) {
      try (FileChannel dir = FileChannel.open(target(name), StandardOpenOption.READ)) {
        dir.force(true);
      }
    }
  }

  /** Reads the payload back through the published target, and for mount access through the staging path too. */
  void expectPayload(String name) throws IOException {
    assertThat(read(block ? target(name) : target(name).resolve(PAYLOAD_FILE))).as("payload of " + name)
        .isEqualTo(payload);
    if (!block) {
      assertThat(read(staging(name).resolve(PAYLOAD_FILE))).as("payload of " + name + " at its staging path")
          .isEqualTo(payload);
    }
  }

  private byte[] read(Path at) throws IOException {
    ByteBuffer buf = ByteBuffer.allocate(payload.length);
    try (FileChannel ch = FileChannel.open(at, StandardOpenOption.READ)) {
      while (buf.hasRemaining() && ch.read(buf, buf.position()) > 0) {
        // until the payload's length is read
      }
    }
    return buf.array();
  }

  // ---- teardown ------------------------------------------------------------------------------

  /** Undoes, through the CSI API, everything the scene still holds: publications, stagings, snapshots, volumes. */
  void tearDown() throws IOException {
    for (String name : List.copyOf(published.keySet())) {
      unpublish(name);
    }
    for (String name : List.copyOf(staged.keySet())) {
      unstage(name);
    }
    for (String name : List.copyOf(snapshots.keySet())) {
      deleteSnapshot(name);
    }
    List<String> newestFirst = new ArrayList<>(volumes.keySet());
    java.util.Collections.reverse(newestFirst);
    for (String name : newestFirst) {
      delete(name);
    }
  }

  /**
   * Nothing is left: no mount under the fixture, no loop device on its data directory, no storage
   * object (image, partial file, record, zvol, snapshot; LUN, target), no node journal record, and
   * nothing the backend keeps of any volume the scene made ({@link TestBackend#leftoversOf}: qnap's
   * iSCSI sessions, node records, multipath maps and LIO targets).
   */
  void expectNothingLeft() throws IOException {
    assertThat(f.ourMounts()).as("mounts under " + f.work).isEmpty();
    assertThat(f.ourLoops()).as("loop devices on " + f.data).isEmpty();
    assertThat(f.storageObjects()).as("storage objects of the " + f.backend + " backend").isEmpty();
    Path journal = f.settings().journalDir();
    if (Files.exists(journal)) {
      try (Stream<Path> records = Files.list(journal)) {
        assertThat(records.toList()).as("node journal records").isEmpty();
      }
    }
    assertThat(contexts.stream().flatMap(c -> f.backend.leftoversOf(f.work, c).stream()).distinct().toList())
        .as("what the " + f.backend + " backend still holds of the volumes made").isEmpty();
  }

  private Volume volume(String name) {
    Volume v = volumes.get(name);
    assertThat(v).as("volume " + name + " was created").isNotNull();
    return v;
  }

  private String id(String name) {
    return volume(name).getVolumeId();
  }

  private String snapshotId(String name) {
    String id = snapshots.get(name);
    assertThat(id).as("snapshot " + name + " was taken").isNotNull();
    return id;
  }
}
