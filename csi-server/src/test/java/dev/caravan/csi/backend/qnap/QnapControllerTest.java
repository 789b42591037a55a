package dev.caravan.csi.backend.qnap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.ControllerGetCapabilitiesRequest;
import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.ControllerServiceCapability;
import dev.caravan.csi.v1.ControllerUnpublishVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.GetCapacityRequest;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListSnapshotsResponse;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.ListVolumesResponse;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.Snapshot;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeCapability.AccessMode.Mode;
import dev.caravan.csi.v1.VolumeContentSource;
import dev.caravan.csi.backend.qnap.QnapSimulator.Flavour;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The qnap controller through a real gRPC client on a real unix socket, against the simulator: what
 * exists is read from the simulator's state, never through the plugin alone.
 */
class QnapControllerTest {
  private static final long GIB = 1L << 30;
  static final String NODE_A = "iqn.1993-08.org.debian:01:node-a";
  static final String NODE_B = "iqn.1993-08.org.debian:01:node-b";

  private QnapSimulator sim;
  private Path work;
  private Plugin plugin;
  private UnixChannel channel;
  private ControllerGrpc.ControllerBlockingStub controller;
  private NodeGrpc.NodeBlockingStub node;
  private IdentityGrpc.IdentityBlockingStub identity;

  private void start(String transport, Map<String, String> extra) throws IOException {
    sim = QnapSimulator.start("rest".equals(transport) ? Flavour.HERO : Flavour.QTS);
    work = Files.createTempDirectory("caravan-qnap-");
    Path creds = work.resolve("qnap-credentials");
    Files.writeString(creds, "user=" + QnapSimulator.USER + "\npassword=" + QnapSimulator.PASSWORD.replace("ü", "\\u00fc")
        + "\n");
    Files.setPosixFilePermissions(creds, PosixFilePermissions.fromString("rw-------"));
    Map<String, String> options = new HashMap<>(Map.of("url", sim.url().toString(), "transport", transport,
        "credentials-file", creds.toString(), "portals", "192.0.2.10, 192.0.2.11:3261", "ready-timeout-seconds", "10"));
    options.putAll(extra);
    Path socket = work.resolve("csi.sock");
    plugin = Plugin.start(new Plugin.Settings("qnap", socket, NODE_A, work.resolve("data"), work.resolve("data/node"),
        "caravan.csi.qnap", 0, options).withAllowedRoots(List.of(work)));
    channel = new UnixChannel(socket);
    controller = ControllerGrpc.newBlockingStub(channel.channel());
    node = NodeGrpc.newBlockingStub(channel.channel());
    identity = IdentityGrpc.newBlockingStub(channel.channel());
  }

  @AfterEach
  void stop() throws IOException {
    if (channel != null) {
      channel.close();
    }
    if (plugin != null) {
      plugin.shutdown(Duration.ofSeconds(2));
      assertThat(sim.liveSessions()).as("the plugin logged out").isZero();
    }
    if (sim != null) {
      assertThat(sim.violations()).isEmpty();
      sim.close();
    }
    if (work != null) {
      try (Stream<Path> s = Files.walk(work)) {
        for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
  }

  static VolumeCapability mount(String fs) {
    return VolumeCapability.newBuilder().setMount(VolumeCapability.MountVolume.newBuilder().setFsType(fs))
        .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(Mode.SINGLE_NODE_WRITER)).build();
  }

  static VolumeCapability block() {
    return VolumeCapability.newBuilder().setBlock(VolumeCapability.BlockVolume.getDefaultInstance())
        .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(Mode.SINGLE_NODE_WRITER)).build();
  }

  static CapacityRange gib(long n) {
    return CapacityRange.newBuilder().setRequiredBytes(n * GIB).build();
  }

  private CreateVolumeRequest.Builder create(String name, long gib) {
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(mount("ext4")).setCapacityRange(gib(gib));
  }

  private static StatusRuntimeException error(ThrowingCallable call) {
    try {
      call.call();
    } catch (StatusRuntimeException e) {
      return e;
    } catch (Throwable t) {
      throw new AssertionError("expected a gRPC error, got " + t, t);
    }
    throw new AssertionError("expected a gRPC error, got OK");
  }

  private ControllerPublishVolumeRequest publish(Volume v, String nodeId) {
    return ControllerPublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).setNodeId(nodeId)
        .setVolumeCapability(mount("ext4")).putAllVolumeContext(v.getVolumeContextMap()).build();
  }

  private ControllerUnpublishVolumeRequest unpublish(Volume v, String nodeId) {
    return ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).setNodeId(nodeId).build();
  }

  private List<String> published(Volume v) {
    return controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build())
        .getStatus().getPublishedNodeIdsList();
  }

  @ParameterizedTest
  @ValueSource(strings = {"cgi", "rest"})
  void createIsIdempotentWholeGibAndDescribesTheTarget(String transport) throws IOException {
    start(transport, Map.of());
    assertThat(identity.probe(ProbeRequest.getDefaultInstance()).getReady().getValue()).isTrue();
    Volume v = controller.createVolume(create("db", 2).build()).getVolume();
    assertThat(controller.createVolume(create("db", 2).build()).getVolume()).isEqualTo(v);
    assertThat(v.getVolumeId()).as("ext4, mount access only").startsWith("qnap/v1/cvem-db-");
    assertThat(v.getCapacityBytes()).isEqualTo(2 * GIB);
    String lunName = v.getVolumeId().substring("qnap/v1/".length());
    assertThat(sim.lunNames()).containsExactly(Map.entry(0, lunName));
    assertThat(sim.targetNames()).as("one target per volume, named like its LUN").containsExactly(Map.entry(0, lunName));
    assertThat(sim.lunBytes(lunName)).isEqualTo(2 * GIB);
    assertThat(v.getVolumeContextMap())
        .containsEntry("targetIqn", QnapSimulator.IQN_PREFIX + lunName + QnapSimulator.IQN_POSTFIX)
        .containsEntry("lun", "0").containsEntry("portals", "192.0.2.10:3260,192.0.2.11:3261")
        .containsEntry("fsType", "ext4").containsEntry("access", "mount").containsKey("naa");
    assertThat(v.getAccessibleTopologyList()).as("the appliance is reachable from every node").isEmpty();
    assertThat(controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build())
        .getVolume()).isEqualTo(v);

    var odd = error(() -> controller.createVolume(create("odd", 0).setCapacityRange(
        CapacityRange.newBuilder().setRequiredBytes(GIB + 1)).build()));
    assertThat(odd.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(odd.getStatus().getDescription()).contains("required_bytes").contains("whole number of GiB");
    var unknown = error(() -> controller.createVolume(create("p", 1).putParameters("compression", "lz4").build()));
    assertThat(unknown.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(unknown.getStatus().getDescription()).contains("compression").contains("pool").contains("thin")
        .contains("fsType");
    assertThat(error(() -> controller.createVolume(create("db", 3).build())).getStatus().getCode())
        .isEqualTo(Code.ALREADY_EXISTS);
    assertThat(error(() -> controller.createVolume(create("db", 2).clearVolumeCapabilities()
        .addVolumeCapabilities(mount("xfs")).build())).getStatus().getCode()).isEqualTo(Code.ALREADY_EXISTS);
    assertThat(error(() -> controller.createVolume(create("db", 2).putParameters("thin", "false").build()))
        .getStatus().getCode()).isEqualTo(Code.ALREADY_EXISTS);
    assertThat(error(() -> controller.createVolume(create("tiny", 0).setCapacityRange(
        CapacityRange.newBuilder().setLimitBytes(GIB / 2)).build())).getStatus().getCode()).isEqualTo(Code.OUT_OF_RANGE);
    assertThat(error(() -> controller.createVolume(create("huge", 0).setCapacityRange(gib(100))
        .putParameters("thin", "false").putParameters("pool", "2").build())).getStatus().getCode())
        .as("thick beyond the pool").isEqualTo(Code.RESOURCE_EXHAUSTED);
    assertThat(sim.lunNames()).as("refusals create nothing").hasSize(1);

    Volume thick = controller.createVolume(create("thick", 1).putParameters("thin", "false")
        .clearVolumeCapabilities().addVolumeCapabilities(mount("xfs")).build()).getVolume();
    assertThat(thick.getVolumeContextMap()).containsEntry("fsType", "xfs");
    Volume dflt = controller.createVolume(create("dflt", 0).clearCapacityRange().build()).getVolume();
    assertThat(dflt.getCapacityBytes()).isEqualTo(GIB);
    assertThat(controller.getCapacity(GetCapacityRequest.getDefaultInstance()).getAvailableCapacity()).isPositive();
  }

  @ParameterizedTest
  @ValueSource(strings = {"cgi", "rest"})
  void publishIsTheFence(String transport) throws IOException {
    start(transport, Map.of());
    assertThat(controller.controllerGetCapabilities(ControllerGetCapabilitiesRequest.getDefaultInstance())
        .getCapabilitiesList()).extracting(c -> c.getRpc().getType())
        .contains(ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME);
    Volume v = controller.createVolume(create("fenced", 1).build()).getVolume();
    String target = v.getVolumeId().substring("qnap/v1/".length());
    assertThat(sim.acl(target)).as("nobody is admitted before a publish").isEmpty();

    controller.controllerPublishVolume(publish(v, NODE_A));
    controller.controllerPublishVolume(publish(v, NODE_A));
    assertThat(sim.acl(target)).containsExactly(NODE_A);
    assertThat(published(v)).containsExactly(NODE_A);
    ListVolumesResponse listed = controller.listVolumes(ListVolumesRequest.getDefaultInstance());
    assertThat(listed.getEntries(0).getStatus().getPublishedNodeIdsList()).containsExactly(NODE_A);

    var second = error(() -> controller.controllerPublishVolume(publish(v, NODE_B)));
    assertThat(second.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(second.getStatus().getDescription()).contains(NODE_A).contains("nomad volume detach");
    assertThat(sim.acl(target)).as("the refused node is not admitted").containsExactly(NODE_A);
    var busy = error(() -> controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build()));
    assertThat(busy.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(busy.getStatus().getDescription()).contains(NODE_A);

    // Node A dies. `nomad volume detach` makes Nomad call ControllerUnpublish for it: no node-side
    // call can happen, and none is needed for the fence to move.
    controller.controllerUnpublishVolume(unpublish(v, NODE_A));
    controller.controllerUnpublishVolume(unpublish(v, NODE_A));
    assertThat(sim.acl(target)).isEmpty();
    controller.controllerPublishVolume(publish(v, NODE_B));
    assertThat(sim.acl(target)).containsExactly(NODE_B);
    assertThat(published(v)).containsExactly(NODE_B);

    assertThat(error(() -> controller.controllerPublishVolume(publish(v, "node-b.example"))).getStatus().getCode())
        .as("a node id that is no initiator names no node").isEqualTo(Code.NOT_FOUND);
    assertThat(error(() -> controller.controllerPublishVolume(publish(v, NODE_B).toBuilder().setReadonly(true).build()))
        .getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(error(() -> controller.controllerPublishVolume(publish(v, NODE_B).toBuilder().clearVolumeCapability()
        .build())).getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(error(() -> controller.controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder()
        .setVolumeId("qnap/v1/cve-gone-0123456789ab").setNodeId(NODE_A).setVolumeCapability(mount("ext4")).build()))
        .getStatus().getCode()).isEqualTo(Code.NOT_FOUND);
    controller.controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder()
        .setVolumeId("qnap/v1/cve-gone-0123456789ab").setNodeId(NODE_A).build());
    controller.controllerUnpublishVolume(unpublish(v, "not-an-initiator"));
    assertThat(sim.acl(target)).containsExactly(NODE_B);
    controller.controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    assertThat(sim.acl(target)).as("no node id: withdrawn from every node").isEmpty();

    controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    assertThat(sim.lunNames()).isEmpty();
    assertThat(sim.targetNames()).isEmpty();
  }

  /** Every log record the JVM writes while it is attached (System.Logger goes to java.util.logging). */
  static final class Captured extends java.util.logging.Handler {
    final List<String> lines = new java.util.concurrent.CopyOnWriteArrayList<>();

    @Override
    public void publish(java.util.logging.LogRecord r) {
      lines.add(r.getLevel() + " " + new java.util.logging.SimpleFormatter().formatMessage(r)
          + (r.getThrown() == null ? "" : " " + r.getThrown()));
    }

    @Override
    public void flush() {}

    @Override
    public void close() {}
  }

  @Test
  void publishSetsChapFromTheNamedSecretsAndRepairsAnInterruptedCreate() throws IOException {
    java.util.logging.Logger root = java.util.logging.Logger.getLogger("");
    Captured log = new Captured();
    java.util.logging.Level before = root.getLevel();
    root.setLevel(java.util.logging.Level.ALL);
    root.addHandler(log);
    try {
      chapAndRepair();
      plugin.shutdown(Duration.ofSeconds(2));
      plugin = null;
    } finally {
      root.removeHandler(log);
      root.setLevel(before);
    }
    assertThat(log.lines).as("something was logged").isNotEmpty();
    assertThat(log.lines).noneMatch(l -> l.contains("s3cret-Chap-pw") || l.contains("an0ther-secret")
        || l.contains(QnapSimulator.PASSWORD));
  }

  private void chapAndRepair() throws IOException {
    start("cgi", Map.of("chap-user-secret", "chapUser", "chap-password-secret", "chapPassword"));
    Volume v = controller.createVolume(create("chap", 1).build()).getVolume();
    assertThat(v.getVolumeContextMap()).containsEntry("chapUserSecret", "chapUser")
        .containsEntry("chapPasswordSecret", "chapPassword").doesNotContainValue("s3cret-Chap-pw");
    String target = v.getVolumeId().substring("qnap/v1/".length());
    var missing = error(() -> controller.controllerPublishVolume(publish(v, NODE_A)));
    assertThat(missing.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(missing.getStatus().getDescription()).contains("chapUser");
    assertThat(sim.acl(target)).isEmpty();
    controller.controllerPublishVolume(publish(v, NODE_A).toBuilder()
        .putSecrets("chapUser", "node-a").putSecrets("chapPassword", "s3cret-Chap-pw").build());
    assertThat(sim.chapOf(target, NODE_A)).hasValueSatisfying(c -> {
      assertThat(c.user()).isEqualTo("node-a");
      assertThat(c.password()).isEqualTo("s3cret-Chap-pw");
    });
    controller.controllerUnpublishVolume(unpublish(v, NODE_A));

    // A CreateVolume interrupted after the LUN: the target is missing; publish finishes the work.
    Volume w = controller.createVolume(create("interrupted", 1).build()).getVolume();
    String name = w.getVolumeId().substring("qnap/v1/".length());
    // unmap and remove the target behind the plugin's back, as a crash before them would have left it
    QnapApi raw = new CgiApi(new ApplianceLogin(new Http(sim.url(), sslDefault(), Duration.ofSeconds(5)),
        new Credentials(QnapSimulator.USER, QnapSimulator.PASSWORD), Duration.ofMinutes(1), java.time.Clock.systemUTC()),
        Duration.ofSeconds(5));
    QnapApi.Target t = raw.targets().stream().filter(x -> x.name().equals(name)).findFirst().orElseThrow();
    raw.unmap(raw.luns().stream().filter(l -> l.name().equals(name)).findFirst().orElseThrow(), t);
    raw.deleteTarget(t);
    raw.close();
    assertThat(controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(w.getVolumeId()).build())
        .getStatus().getVolumeCondition().getAbnormal()).isTrue();
    controller.controllerPublishVolume(publish(w, NODE_B).toBuilder()
        .putSecrets("chapUser", "node-b").putSecrets("chapPassword", "an0ther-secret").build());
    assertThat(sim.targetNames()).containsValue(name);
    assertThat(sim.acl(name)).containsExactly(NODE_B);
    assertThat(controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(w.getVolumeId()).build())
        .getStatus().getVolumeCondition().getAbnormal()).isFalse();
  }

  private static javax.net.ssl.SSLContext sslDefault() {
    try {
      return javax.net.ssl.SSLContext.getDefault();
    } catch (java.security.NoSuchAlgorithmException e) {
      throw new AssertionError(e);
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"cgi", "rest"})
  void snapshotsClonesExpandAndPages(String transport) throws IOException {
    start(transport, Map.of());
    Volume v = controller.createVolume(create("src", 1).addVolumeCapabilities(block()).build()).getVolume();
    Snapshot s = controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(v.getVolumeId())
        .setName("s1").build()).getSnapshot();
    assertThat(controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(v.getVolumeId())
        .setName("s1").build()).getSnapshot()).isEqualTo(s);
    assertThat(s.getReadyToUse()).isTrue();
    assertThat(s.getSourceVolumeId()).isEqualTo(v.getVolumeId());
    assertThat(s.getSizeBytes()).isEqualTo(GIB);
    var held = error(() -> controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build()));
    assertThat(held.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(held.getStatus().getDescription()).contains(s.getSnapshotId());
    Volume other = controller.createVolume(create("other", 1).build()).getVolume();
    assertThat(error(() -> controller.createSnapshot(CreateSnapshotRequest.newBuilder()
        .setSourceVolumeId(other.getVolumeId()).setName("s1").build())).getStatus().getCode()).isEqualTo(Code.ALREADY_EXISTS);

    Volume fromSnap = controller.createVolume(create("from-snap", 3).setVolumeContentSource(VolumeContentSource.newBuilder()
        .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(s.getSnapshotId()))).build()).getVolume();
    assertThat(fromSnap.getCapacityBytes()).as("cloned, then grown").isEqualTo(3 * GIB);
    assertThat(fromSnap.getContentSource().getSnapshot().getSnapshotId()).isEqualTo(s.getSnapshotId());
    Volume fromVol = controller.createVolume(create("from-vol", 0).clearCapacityRange().setVolumeContentSource(
        VolumeContentSource.newBuilder().setVolume(VolumeContentSource.VolumeSource.newBuilder()
            .setVolumeId(v.getVolumeId()))).build()).getVolume();
    assertThat(fromVol.getCapacityBytes()).isEqualTo(GIB);
    assertThat(sim.snapshotNames()).as("the copy's own snapshot is gone again").hasSize(1);
    assertThat(sim.lunBytes(fromSnap.getVolumeId().substring(8))).isEqualTo(3 * GIB);
    assertThat(error(() -> controller.createVolume(create("small", 0).setCapacityRange(CapacityRange.newBuilder()
        .setLimitBytes(GIB / 2)).setVolumeContentSource(VolumeContentSource.newBuilder().setSnapshot(
            VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(s.getSnapshotId()))).build())).getStatus().getCode())
        .isEqualTo(Code.OUT_OF_RANGE);

    // expand: whole GiB, grow only
    var grown = controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setCapacityRange(gib(4)).setVolumeCapability(mount("ext4")).build());
    assertThat(grown.getCapacityBytes()).isEqualTo(4 * GIB);
    assertThat(grown.getNodeExpansionRequired()).isTrue();
    assertThat(controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setCapacityRange(gib(2)).setVolumeCapability(block()).build()).getCapacityBytes()).isEqualTo(4 * GIB);
    assertThat(error(() -> controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(5 * GIB + 4096))
        .build())).getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(sim.lunBytes(v.getVolumeId().substring(8))).isEqualTo(4 * GIB);

    // pages
    List<String> seen = new ArrayList<>();
    String token = "";
    do {
      ListVolumesResponse r = controller.listVolumes(ListVolumesRequest.newBuilder().setMaxEntries(2).setStartingToken(token)
          .build());
      r.getEntriesList().forEach(e -> seen.add(e.getVolume().getVolumeId()));
      token = r.getNextToken();
    } while (!token.isEmpty());
    assertThat(seen).containsExactlyInAnyOrder(v.getVolumeId(), other.getVolumeId(), fromSnap.getVolumeId(),
        fromVol.getVolumeId()).isSorted();
    controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(other.getVolumeId()).setName("s2").build());
    ListSnapshotsResponse p1 = controller.listSnapshots(ListSnapshotsRequest.newBuilder().setMaxEntries(1).build());
    ListSnapshotsResponse p2 = controller.listSnapshots(ListSnapshotsRequest.newBuilder().setMaxEntries(1)
        .setStartingToken(p1.getNextToken()).build());
    assertThat(p2.getNextToken()).isEmpty();
    assertThat(List.of(p1.getEntries(0).getSnapshot().getSnapshotId(), p2.getEntries(0).getSnapshot().getSnapshotId()))
        .doesNotHaveDuplicates().contains(s.getSnapshotId());
    assertThat(controller.listSnapshots(ListSnapshotsRequest.newBuilder().setSourceVolumeId(v.getVolumeId()).build())
        .getEntriesList()).extracting(e -> e.getSnapshot().getSnapshotId()).containsExactly(s.getSnapshotId());

    controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(s.getSnapshotId()).build());
    controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(s.getSnapshotId()).build());
    controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    assertThat(sim.lunNames()).hasSize(3).doesNotContainValue(v.getVolumeId().substring(8));
  }

  private static final String PASSPHRASE = "qnap-controller-passphrase";
  private static final long HEADER = dev.caravan.storage.crypt.Luks2.HEADER_BYTES;

  private CreateVolumeRequest.Builder encrypted(String name, long gib) {
    return create(name, gib).putParameters("encryption", "on").putSecrets("encryptionPassphrase", PASSPHRASE);
  }

  /**
   * encryption=on is recorded in the LUN's name (so in the id, on the appliance) and the context; the
   * LUN is the whole GiB that holds the size asked for and the LUKS2 header, and the capacity every call
   * reports is the LUN less the header: what the node's mapping holds.
   */
  @Test
  void encryptionOnIsRecordedInTheLunNameAndItsLunHasRoomForTheHeader() throws Exception {
    start("cgi", Map.of());
    Volume v = controller.createVolume(encrypted("sealed", 1).addVolumeCapabilities(block()).build()).getVolume();
    assertThat(v.getVolumeId()).startsWith("qnap/v1/cvel-sealed-");
    assertThat(v.getVolumeContextMap()).containsEntry("encryption", "on");
    assertThat(v.getCapacityBytes()).isEqualTo(2 * GIB - HEADER);
    String lun = v.getVolumeId().substring(8);
    assertThat(sim.lunBytes(lun)).as("the LUN, header room included").isEqualTo(2 * GIB);
    Volume read = controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).build()).getVolume();
    assertThat(read.getVolumeContextMap()).isEqualTo(v.getVolumeContextMap());
    assertThat(read.getCapacityBytes()).isEqualTo(2 * GIB - HEADER);
    assertThat(controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
        .extracting(e -> e.getVolume().getCapacityBytes()).containsExactly(2 * GIB - HEADER);
    var tooSmall = error(() -> controller.createVolume(encrypted("small", 1)
        .setCapacityRange(gib(1).toBuilder().setLimitBytes(GIB)).build()));
    assertThat(tooSmall.getStatus().getCode()).isEqualTo(Code.OUT_OF_RANGE);
    assertThat(tooSmall.getStatus().getDescription()).contains("capacity_range.limit_bytes", "LUKS2 header");
    assertThat(controller.createVolume(encrypted("sealed", 1).addVolumeCapabilities(block()).build()).getVolume())
        .as("the retry").isEqualTo(v);

    var off = error(() -> controller.createVolume(create("sealed", 1).build()));
    assertThat(off.getStatus().getCode()).isEqualTo(Code.ALREADY_EXISTS);
    assertThat(off.getStatus().getDescription()).contains("parameters.encryption=on, not off");
    var noKey = error(() -> controller.createVolume(create("other", 1).putParameters("encryption", "on").build()));
    assertThat(noKey.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED);
    assertThat(noKey.getStatus().getDescription()).contains("secrets.encryptionPassphrase");
    assertThat(sim.lunNames()).hasSize(1);

    var grown = controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).setCapacityRange(gib(3)).setVolumeCapability(block()).build());
    assertThat(grown.getCapacityBytes()).isEqualTo(4 * GIB - HEADER);
    assertThat(grown.getNodeExpansionRequired()).as("the mapping grows on the node, block access too").isTrue();
    assertThat(sim.lunBytes(lun)).isEqualTo(4 * GIB);
    Snapshot s = controller.createSnapshot(CreateSnapshotRequest.newBuilder().setSourceVolumeId(v.getVolumeId())
        .setName("sealed-snap").build()).getSnapshot();
    assertThat(s.getSizeBytes()).isEqualTo(4 * GIB - HEADER);
    controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(s.getSnapshotId()).build());
    controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    assertThat(sim.lunNames()).isEmpty();
  }

  /**
   * A copy holds its source's blocks, LUKS2 header included: from an encrypted source it must ask for
   * encryption=on, from a plain one it cannot; a mismatch is INVALID_ARGUMENT and makes nothing.
   */
  @Test
  void aCopyIsEncryptedExactlyWhenItsSourceIs() throws Exception {
    start("cgi", Map.of());
    Volume sealed = controller.createVolume(encrypted("sealed", 1).build()).getVolume();
    Volume plain = controller.createVolume(create("plain", 1).build()).getVolume();
    Snapshot sealedSnap = controller.createSnapshot(CreateSnapshotRequest.newBuilder()
        .setSourceVolumeId(sealed.getVolumeId()).setName("sealed-snap").build()).getSnapshot();
    Snapshot plainSnap = controller.createSnapshot(CreateSnapshotRequest.newBuilder()
        .setSourceVolumeId(plain.getVolumeId()).setName("plain-snap").build()).getSnapshot();
    VolumeContentSource fromSealed = VolumeContentSource.newBuilder().setSnapshot(
        VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(sealedSnap.getSnapshotId())).build();
    VolumeContentSource fromPlain = VolumeContentSource.newBuilder().setSnapshot(
        VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(plainSnap.getSnapshotId())).build();
    VolumeContentSource fromSealedVolume = VolumeContentSource.newBuilder().setVolume(
        VolumeContentSource.VolumeSource.newBuilder().setVolumeId(sealed.getVolumeId())).build();
    VolumeContentSource fromPlainVolume = VolumeContentSource.newBuilder().setVolume(
        VolumeContentSource.VolumeSource.newBuilder().setVolumeId(plain.getVolumeId())).build();

    for (VolumeContentSource src : List.of(fromSealed, fromSealedVolume)) {
      var e = error(() -> controller.createVolume(create("copy", 1).setVolumeContentSource(src).build()));
      assertThat(e.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
      assertThat(e.getStatus().getDescription()).contains("volume_content_source.", " is encrypted",
          "parameters.encryption=on", "secrets.encryptionPassphrase");
    }
    for (VolumeContentSource src : List.of(fromPlain, fromPlainVolume)) {
      var e = error(() -> controller.createVolume(encrypted("copy", 1).setVolumeContentSource(src).build()));
      assertThat(e.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
      assertThat(e.getStatus().getDescription()).contains("volume_content_source.", "is not encrypted",
          "parameters.encryption=on cannot be honoured");
    }
    assertThat(sim.lunNames()).as("nothing made").hasSize(2);
    assertThat(sim.snapshotNames()).as("no snapshot taken for a refused copy").hasSize(2);

    Volume copy = controller.createVolume(encrypted("copy", 1).setVolumeContentSource(fromSealed).build()).getVolume();
    assertThat(copy.getVolumeId()).startsWith("qnap/v1/cveml-copy-");
    assertThat(copy.getVolumeContextMap()).containsEntry("encryption", "on");
    assertThat(copy.getCapacityBytes()).isEqualTo(2 * GIB - HEADER);
    assertThat(sim.lunBytes(copy.getVolumeId().substring(8))).isEqualTo(2 * GIB);
    Volume bigger = controller.createVolume(encrypted("bigger", 2).setVolumeContentSource(fromSealedVolume).build())
        .getVolume();
    assertThat(bigger.getCapacityBytes()).isEqualTo(3 * GIB - HEADER);
    assertThat(sim.lunBytes(bigger.getVolumeId().substring(8))).isEqualTo(3 * GIB);
    Volume plainCopy = controller.createVolume(create("plain-copy", 1).setVolumeContentSource(fromPlain).build())
        .getVolume();
    assertThat(plainCopy.getVolumeContextMap()).doesNotContainKey("encryption");
  }

  /** Where this host has no dm-crypt, an encrypted volume's stage is refused, saying so, before any login. */
  @Test
  void aNodeWithoutDmCryptRefusesToStageAnEncryptedVolume() throws Exception {
    org.junit.jupiter.api.Assumptions.assumeTrue(dev.caravan.storage.crypt.Luks2.unavailableReason().isPresent(),
        "this host can open LUKS2 mappings; LuksOnQnapGuestTest stages encrypted qnap volumes");
    start("cgi", Map.of());
    Volume v = controller.createVolume(encrypted("sealed", 1).build()).getVolume();
    Path staging = Files.createDirectories(work.resolve("client/csi/staging"));
    NodeStageVolumeRequest.Builder stage = NodeStageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setStagingTargetPath(staging.toString()).setVolumeCapability(mount("ext4"))
        .putAllVolumeContext(v.getVolumeContextMap());
    var missing = error(() -> node.nodeStageVolume(stage.build()));
    assertThat(missing.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED);
    assertThat(missing.getStatus().getDescription()).contains("secrets.encryptionPassphrase");
    var e = error(() -> node.nodeStageVolume(stage.putSecrets("encryptionPassphrase", PASSPHRASE).build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(e.getStatus().getDescription()).contains("is encrypted (LUKS2)", "cannot open it")
        .doesNotContain(PASSPHRASE);
  }

  /**
   * A rotation's previous passphrase is held to the passphrase's rule: one that breaks it is
   * INVALID_ARGUMENT naming its key and not its value, on any host, before the node checks for dm-crypt
   * or logs in anywhere (a login would answer otherwise here, where no initiator runs).
   */
  @Test
  void aMalformedPreviousPassphraseIsRefusedBeforeTheNodeDoesAnything() throws Exception {
    start("cgi", Map.of());
    Volume v = controller.createVolume(encrypted("rotating", 1).build()).getVolume();
    Path staging = Files.createDirectories(work.resolve("client/csi/staging"));
    var e = error(() -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setStagingTargetPath(staging.toString()).setVolumeCapability(mount("ext4"))
        .putAllVolumeContext(v.getVolumeContextMap()).putSecrets("encryptionPassphrase", PASSPHRASE)
        .putSecrets("encryptionPassphrasePrevious", "short").build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(e.getStatus().getDescription()).contains("secrets.encryptionPassphrasePrevious", "8 to 512 bytes")
        .doesNotContain("short").doesNotContain(PASSPHRASE);
  }

  @Test
  void twoNodesPublishingAtOnceNeverBothGetIn() throws Exception {
    start("cgi", Map.of());
    Volume v = controller.createVolume(create("race", 1).build()).getVolume();
    String target = v.getVolumeId().substring(8);
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(2);
    try {
      for (int round = 0; round < 8; round++) {
        java.util.concurrent.CyclicBarrier go = new java.util.concurrent.CyclicBarrier(2);
        List<java.util.concurrent.Future<Code>> outcomes = new ArrayList<>();
        for (String n : List.of(NODE_A, NODE_B)) {
          outcomes.add(pool.submit(() -> {
            go.await();
            try {
              controller.controllerPublishVolume(publish(v, n));
              return Code.OK;
            } catch (StatusRuntimeException e) {
              return e.getStatus().getCode();
            }
          }));
        }
        List<Code> codes = new ArrayList<>();
        for (var o : outcomes) {
          codes.add(o.get());
        }
        assertThat(codes).as("round " + round).containsOnlyOnce(Code.OK);
        assertThat(codes).as("round " + round).containsAnyOf(Code.FAILED_PRECONDITION, Code.ABORTED);
        assertThat(sim.acl(target)).hasSize(1);
        controller.controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
            .build());
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void anInterruptedCreateIsFinishedByItsRetry() throws IOException {
    start("cgi", Map.of());
    sim.inject("add_target", -1, 1);
    var failed = error(() -> controller.createVolume(create("retry", 1).build()));
    assertThat(failed.getStatus().getCode()).isEqualTo(Code.INTERNAL);
    assertThat(failed.getStatus().getDescription()).contains("add_target").contains("result -1");
    assertThat(sim.lunNames()).as("the LUN was made before the target failed").hasSize(1);
    Volume v = controller.createVolume(create("retry", 1).build()).getVolume();
    assertThat(sim.lunNames()).as("the retry reuses it").hasSize(1);
    assertThat(sim.targetNames()).containsValue(v.getVolumeId().substring(8));
    assertThat(v.getVolumeContextMap()).containsEntry("lun", "0");
  }

  @Test
  void heroH6RefusingCgiWritesIsReportedInTheAppliancesWords() throws IOException {
    start("rest", Map.of());
    sim.cgiWritesRefused = true;
    // The target's Default Policy is set through the CGI on both APIs (no REST call for it is known):
    // h6 refusing it means no target Caravan makes there can be fenced, and the create says so.
    var e = error(() -> controller.createVolume(create("h6", 1).build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.INTERNAL);
    assertThat(e.getStatus().getDescription()).contains("edit_init Default Policy").contains("result -1");
    assertThat(sim.lunNames()).hasSize(1);
    assertThat(sim.acl(sim.lunNames().values().iterator().next())).isEmpty();
  }

  @Test
  void accessTypesAreRecordedInTheIdAndReadBackTheSame() throws IOException {
    start("cgi", Map.of());
    Volume both = controller.createVolume(create("both", 1).addVolumeCapabilities(block()).build()).getVolume();
    Volume raw = controller.createVolume(CreateVolumeRequest.newBuilder().setName("raw")
        .addVolumeCapabilities(block()).setCapacityRange(gib(1)).build()).getVolume();
    assertThat(both.getVolumeId()).startsWith("qnap/v1/cve-both-");
    assertThat(both.getVolumeContextMap()).containsEntry("access", "block,mount");
    assertThat(raw.getVolumeId()).startsWith("qnap/v1/cveb-raw-");
    assertThat(raw.getVolumeContextMap()).containsEntry("access", "block");
    for (Volume v : List.of(both, raw)) {
      assertThat(controller.controllerGetVolume(ControllerGetVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
          .build()).getVolume().getVolumeContextMap()).isEqualTo(v.getVolumeContextMap());
    }
    assertThat(controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
        .extracting(e -> e.getVolume().getVolumeContextMap().get("access")).containsExactlyInAnyOrder("block,mount", "block");
    // The same name again for an access type the volume was not made for: ALREADY_EXISTS, as on file and local.
    var e = error(() -> controller.createVolume(create("raw", 1).build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.ALREADY_EXISTS);
    assertThat(e.getStatus().getDescription()).contains("was created for block access, not mount");
    assertThat(controller.createVolume(create("both", 1).build()).getVolume()).as("a subset is the same volume")
        .isEqualTo(both);
  }

  /**
   * A volume context naming a portal that is not the node's own (qnap.portals) is refused before any
   * login: the node would otherwise present its initiator name and CHAP secret to that host.
   */
  @Test
  void theNodeLogsInOnlyToItsOwnPortals() throws IOException {
    start("cgi", Map.of("chap-user-secret", "chapUser", "chap-password-secret", "chapPassword"));
    Volume v = controller.createVolume(create("p", 1).build()).getVolume();
    Path staging = Files.createDirectories(work.resolve("client/csi/staging"));
    for (String portals : List.of("203.0.113.66:3260", "192.0.2.10:3260,203.0.113.66", "192.0.2.11:3260")) {
      Map<String, String> context = new HashMap<>(v.getVolumeContextMap());
      context.put("portals", portals);
      var e = error(() -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
          .setStagingTargetPath(staging.toString()).setVolumeCapability(mount("ext4"))
          .putAllVolumeContext(context).putSecrets("chapUser", "u").putSecrets("chapPassword", "chap-secret-12")
          .build()));
      assertThat(e.getStatus().getCode()).as(portals).isEqualTo(Code.INVALID_ARGUMENT);
      assertThat(e.getStatus().getDescription()).as(portals).contains("volume_context.portals")
          .containsPattern("'(203\\.0\\.113\\.66(:3260)?|192\\.0\\.2\\.11:3260)'").contains("qnap.portals")
          .doesNotContain("chap-secret-12");
    }
  }

  @Test
  void theNodeRefusesAContextOrSecretsItCannotUseBeforeTouchingTheHost() throws IOException {
    start("cgi", Map.of("chap-user-secret", "chapUser", "chap-password-secret", "chapPassword"));
    Volume v = controller.createVolume(create("n", 1).build()).getVolume();
    Path staging = Files.createDirectories(work.resolve("client/csi/staging"));
    Map<String, String> context = new java.util.HashMap<>(v.getVolumeContextMap());
    context.remove("naa");
    var e = error(() -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setStagingTargetPath(staging.toString()).setVolumeCapability(mount("ext4"))
        .putAllVolumeContext(context).build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(e.getStatus().getDescription()).contains("volume_context.naa");
    e = error(() -> node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setStagingTargetPath(staging.toString()).setVolumeCapability(mount("ext4"))
        .putAllVolumeContext(v.getVolumeContextMap()).putSecrets("chapUser", "node-a").build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(e.getStatus().getDescription()).contains("secrets lack 'chapPassword'");
    assertThat(sim.acl(v.getVolumeId().substring(8))).as("nothing changed on the appliance").isEmpty();
    assertThat(node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setStagingTargetPath(staging.toString()).build())).as("nothing was staged: unstaging succeeds").isNotNull();
  }

  /** The administrator's password file is refused, as ssh refuses a private key, when others may read it. */
  @Test
  void aCredentialsFileOthersMayReadIsRefusedNamingItsModeAndTheFix(@TempDir Path dir) throws IOException {
    Path creds = dir.resolve("qnap-credentials");
    Files.writeString(creds, "user=admin\npassword=hunter2-secret\n");
    for (String mode : List.of("rw-r--r--", "rw-r-----", "rw----r--", "rw--w----")) {
      Files.setPosixFilePermissions(creds, PosixFilePermissions.fromString(mode));
      assertThatThrownBy(() -> Credentials.load(java.util.Optional.of(creds), Map.of())).as(mode)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("qnap.credentials-file " + creds)
          .hasMessageContaining(mode)
          .hasMessageContaining("chmod 600 " + creds)
          .hasMessageNotContaining("hunter2-secret");
    }
    Files.setPosixFilePermissions(creds, PosixFilePermissions.fromString("rw-r--r--"));
    assertThatThrownBy(() -> Credentials.load(java.util.Optional.of(creds), Map.of())).hasMessageContaining("mode 0644");
    Files.setPosixFilePermissions(creds, PosixFilePermissions.fromString("rw-------"));
    assertThat(Credentials.load(java.util.Optional.of(creds), Map.of()).password()).isEqualTo("hunter2-secret");
    Files.setPosixFilePermissions(creds, PosixFilePermissions.fromString("r--------"));
    assertThat(Credentials.load(java.util.Optional.of(creds), Map.of()).user()).isEqualTo("admin");
  }

  @Test
  void badSettingsStopTheStartNamingTheKey() {
    assertThatThrownBy(() -> QnapConfig.parse(Map.of("url", "http://192.0.2.1", "portals", "192.0.2.1")))
        .hasMessageContaining("plain http").hasMessageContaining("https");
    assertThatThrownBy(() -> QnapConfig.parse(Map.of("url", "https://nas", "portals", "nas", "password", "x")))
        .hasMessageContaining("qnap.password").hasMessageContaining("qnap.credentials-file");
    assertThatThrownBy(() -> QnapConfig.parse(Map.of("url", "https://nas")))
        .hasMessageContaining("qnap.portals");
    assertThatThrownBy(() -> QnapConfig.parse(Map.of("url", "https://nas", "portals", "nas", "chap-user-secret", "u")))
        .hasMessageContaining("together");
    assertThatThrownBy(() -> Credentials.load(java.util.Optional.empty(), Map.of(Credentials.ENV_USER, "admin")))
        .hasMessageContaining(Credentials.ENV_PASSWORD);
    Credentials c = Credentials.load(java.util.Optional.empty(), Map.of(Credentials.ENV_USER, "admin",
        Credentials.ENV_PASSWORD, "hunter2-secret"));
    assertThat(c.password()).isEqualTo("hunter2-secret");
    assertThat(c.toString()).doesNotContain("hunter2-secret");
    QnapConfig ok = QnapConfig.parse(Map.of("url", "https://nas.example:8443", "portals", "10.0.0.1,[fd00::1]:3261"));
    assertThat(ok.portals()).containsExactly("10.0.0.1:3260", "[fd00::1]:3261");
    assertThat(ok.transport()).isEqualTo(QnapConfig.Transport.AUTO);
    assertThat(ok.iscsiIface()).as("the host's own identity by default").isEmpty();
    assertThat(QnapConfig.parse(Map.of("url", "https://nas", "portals", "nas", "iscsi-iface", "eth1-san")).iscsiIface())
        .contains("eth1-san");
    assertThatThrownBy(() -> QnapConfig.parse(Map.of("url", "https://nas", "portals", "nas", "iscsi-iface", "../x")))
        .hasMessageContaining("qnap.iscsi-iface").hasMessageContaining("iSCSI interface '../x'");
  }
}
