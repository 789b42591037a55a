package dev.caravan.csi.scenario;

import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.observe.inspect.Chain;
import dev.caravan.csi.observe.inspect.Finding;
import dev.caravan.csi.support.Json;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.ControllerUnpublishVolumeRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeExpandVolumeRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.crypt.Luks2;
import dev.caravan.storage.iscsi.Iscsi;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.multipath.Multipath;
import dev.caravan.storage.testing.Bytes;
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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * An encrypted ({@code encryption=on}) qnap volume end to end through the CSI socket, in the guest:
 * real LIO targets behind the simulator, open-iscsi, multipathd and dm-crypt. The multipath map holds
 * LUKS2, the filesystem lives on the mapping (named from the LUN's WWID), the LUN's bytes on the
 * target never hold the plaintext, a wrong or missing passphrase stages nothing and leaves no session,
 * the right one reads the data back, the volume grows through ControllerExpandVolume and
 * NodeExpandVolume, and a LUN that holds a filesystem is never formatted as LUKS2. {@code caravan
 * inspect} shows the mapping as the volume's device, open over the map, and closed after unstage. A
 * stage whose secrets rotate the passphrase makes the new one the LUKS2 header's only key slot; one
 * whose previous passphrase is wrong too changes nothing.
 */
class LuksOnQnapGuestTest {
  private static final String PASSPHRASE = "qnap-luks-e2e-passphrase-Hw27";
  private static final String SECRET = "encryptionPassphrase";
  private static final String ROTATED = "qnap-luks-e2e-rotated-Vb58";
  private static final String PREVIOUS = "encryptionPassphrasePrevious";
  private static final long GIB = 1L << 30;
  private static final byte[] LUKS_MAGIC = {'L', 'U', 'K', 'S', (byte) 0xba, (byte) 0xbe};

  private PluginFixture f;
  private final VolumeCapability cap = Caps.mount("ext4");
  private final List<String> wwids = new ArrayList<>();

  @BeforeEach
  void start() throws IOException {
    org.junit.jupiter.api.Assumptions.assumeTrue(Luks2.unavailableReason().isEmpty(),
        () -> "LUKS2 on qnap needs dm-crypt: " + Luks2.unavailableReason().orElse(""));
    f = PluginFixture.start(TestBackend.qnapOnLio());
  }

  @AfterEach
  void stop() throws IOException {
    // A failed case may leave a mapping open on a map: close it so the map and the target can go.
    for (String wwid : wwids) {
      Luks2.close(mappingOf(wwid));
    }
    if (f != null) {
      f.close();
    }
  }

  private Volume create(String name, boolean encrypted) {
    CreateVolumeRequest.Builder r = CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(GIB));
    if (encrypted) {
      r.putParameters("encryption", "on").putSecrets(SECRET, PASSPHRASE);
    }
    Volume v = f.controller.createVolume(r.build()).getVolume();
    wwids.add("3" + v.getVolumeContextMap().get("naa"));
    f.controller.controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setNodeId(f.backend.nodeId()).setVolumeCapability(cap).build());
    return v;
  }

  private void stage(Volume v, Path staging, Map<String, String> secrets) {
    f.stage(v, staging, cap, secrets);
  }

  /** The mapping name the node derives from the LUN's WWID (the oracle repeats the rule). */
  private static String mappingOf(String wwid) {
    return Luks2.mappingName("caravan-qnap:" + wwid);
  }

  /** What {@code caravan inspect} shows of the volume on this node. */
  private Chain inspect(Volume v) {
    return f.plugin().observability().inspector().inspect(v.getVolumeId());
  }

  /** A layer of the chain: its state and its evidence. */
  @SuppressWarnings("unchecked") // the inspector's layers are JSON-shaped maps
  private static Map<String, Object> layer(Chain chain, String name) {
    return (Map<String, Object>) chain.layers().get(name);
  }

  /** The backend's evidence of the volume: its properties, the LUKS2 mapping's among them. */
  @SuppressWarnings("unchecked") // the backend layer's properties are BackendObject's map of strings
  private static Map<String, String> backendProperties(Chain chain) {
    return (Map<String, String>) ((Map<String, Object>) layer(chain, "backend").get("evidence")).get("properties");
  }

  private static String wwid(Volume v) {
    return "3" + v.getVolumeContextMap().get("naa");
  }

  @Test
  void stagesOnAMappingOverTheMapKeepsOnlyCiphertextOnTheLunRefusesAWrongPassphraseRotatesAndGrows() throws IOException {
    Volume v = create("secret-vol", true);
    assertThat(v.getVolumeContextMap()).containsEntry("encryption", "on");
    assertThat(v.getCapacityBytes()).isEqualTo(2 * GIB - Luks2.HEADER_BYTES);
    String iqn = v.getVolumeContextMap().get("targetIqn");
    String mapping = mappingOf(wwid(v));
    Path staging = f.dir("staging/default/secret-vol/rw-file-system-single-node-writer");

    stage(v, staging, Map.of(SECRET, PASSPHRASE));
    var m = Luks2.status(mapping);
    assertThat(m.open()).as("mapping %s open", mapping).isTrue();
    Path map = m.device().orElseThrow();
    assertThat(Multipath.wwidOf(map)).as("the mapping lies on the LUN's multipath map").contains(Wwid.of(wwid(v)));
    assertThat(Probe.probe(map).type()).contains("crypto_LUKS");
    String luksUuid = Probe.probe(map).uuid().orElseThrow();
    assertThat(m.sizeBytes()).as("the mapping holds the capacity reported").isEqualTo(v.getCapacityBytes());
    assertThat(MountTable.at(staging)).get().satisfies(e -> assertThat(e.fsType()).isEqualTo("ext4"));
    assertThat(Iscsi.system().sessions()).filteredOn(s -> s.target().equals(iqn)).hasSize(2);
    // caravan inspect: the mapping is the volume's device, open over the LUN's map; the attachment
    // layer agrees with the journal, and nothing of the passphrase is shown.
    Chain staged = inspect(v);
    assertThat(backendProperties(staged)).containsEntry("encrypted", "yes")
        .containsEntry("luks2.mapping", "/dev/mapper/" + mapping).containsEntry("luks2.open", "yes")
        .containsEntry("luks2.device", map.toString());
    assertThat(layer(staged, "attachment")).as("%s", staged.toText()).containsEntry("state", "ok");
    assertThat(staged.findings()).as("%s", staged.toText()).extracting(Finding::code)
        .doesNotContain("device-detached", "device-without-record");
    assertThat(Json.write(staged.toJson())).doesNotContain(PASSPHRASE);

    Path target = f.dir("per-alloc/a1/secret-vol").resolve("rw-file-system-single-node-writer");
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).setVolumeCapability(cap).build());
    byte[] plain = "qnap data written through the mapping, never plain on the LUN".getBytes(StandardCharsets.UTF_8);
    Files.write(target.resolve("kept.txt"), plain);
    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setTargetPath(target.toString()).build());
    f.unstage(v.getVolumeId(), staging);
    assertThat(Luks2.status(mapping).open()).as("mapping closed at unstage").isFalse();
    assertThat(backendProperties(inspect(v))).containsEntry("luks2.open", "no").doesNotContainKey("luks2.device");
    assertThat(Multipath.system().maps()).as("map flushed").noneMatch(x -> x.wwid().value().equals(wwid(v)));
    assertThat(Iscsi.system().sessions()).as("logged out").noneMatch(s -> s.target().equals(iqn));
    assertThat(lunFilesContaining(LUKS_MAGIC)).as("the LUN's file on the target holds the LUKS2 header").hasSize(1);
    assertThat(lunFilesContaining(plain)).as("LUN files on the target holding the plaintext").isEmpty();

    // A wrong passphrase: UNAUTHENTICATED naming the secret; nothing mounted or opened, no session left.
    StatusRuntimeException wrong = error(() -> stage(v, staging, Map.of(SECRET, "not-the-passphrase")));
    assertThat(wrong.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED);
    assertThat(wrong.getStatus().getDescription()).contains("secrets." + SECRET).doesNotContain("not-the-passphrase");
    assertThat(MountTable.isMountPoint(staging)).isFalse();
    assertThat(Luks2.status(mapping).open()).isFalse();
    assertThat(Iscsi.system().sessions()).noneMatch(s -> s.target().equals(iqn));
    // A missing one: the same code, and no login at all.
    StatusRuntimeException missing = error(() -> f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).putAllVolumeContext(v.getVolumeContextMap())
        .setStagingTargetPath(staging.toString()).setVolumeCapability(cap).build()));
    assertThat(missing.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED);
    assertThat(missing.getStatus().getDescription()).contains("secrets." + SECRET);
    assertThat(Iscsi.system().sessions()).noneMatch(s -> s.target().equals(iqn));

    // A rotation whose previous passphrase is wrong too: UNAUTHENTICATED naming both secrets and
    // neither value, no session left, and the header's key slots as they were (read on the target's
    // side, through the loop device it serves the LUN from).
    Path lunDevice = lunLoopDevice();
    List<Integer> slots = Luks2.keySlots(lunDevice);
    StatusRuntimeException neither =
        error(() -> stage(v, staging, Map.of(SECRET, ROTATED, PREVIOUS, "not-the-previous-either")));
    assertThat(neither.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED);
    assertThat(neither.getStatus().getDescription()).contains("secrets." + SECRET, "secrets." + PREVIOUS)
        .doesNotContain(ROTATED).doesNotContain("not-the-previous-either").doesNotContain(PASSPHRASE);
    assertThat(MountTable.isMountPoint(staging)).isFalse();
    assertThat(Luks2.status(mapping).open()).isFalse();
    assertThat(Iscsi.system().sessions()).noneMatch(s -> s.target().equals(iqn));
    assertThat(Luks2.keySlots(lunDevice)).as("key slots after the refused rotation").isEqualTo(slots);
    assertThat(Luks2.slotOf(lunDevice, ROTATED.getBytes(StandardCharsets.UTF_8))).isEmpty();

    // The rotating stage: opened with the previous passphrase, which then opens nothing; the new one is
    // the header's only key slot, and the data and the header's identity are kept.
    stage(v, staging, Map.of(SECRET, ROTATED, PREVIOUS, PASSPHRASE));
    assertThat(Files.readAllBytes(staging.resolve("kept.txt"))).isEqualTo(plain);
    Path mapped = Luks2.status(mapping).device().orElseThrow();
    assertThat(Probe.probe(mapped).uuid()).as("the LUKS2 header was never rewritten").contains(luksUuid);
    assertThat(Luks2.keySlots(mapped)).as("key slots after the rotation").hasSize(1);
    assertThat(Luks2.slotOf(mapped, PASSPHRASE.getBytes(StandardCharsets.UTF_8))).as("the previous passphrase's slot")
        .isEmpty();
    assertThat(Luks2.slotOf(mapped, ROTATED.getBytes(StandardCharsets.UTF_8))).isPresent();

    long before = Files.getFileStore(staging).getTotalSpace();
    long mappingBefore = Luks2.status(mapping).sizeBytes();
    f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setCapacityRange(Caps.bytes(2 * GIB)).setVolumeCapability(cap).build());
    f.node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setVolumePath(staging.toString()).setCapacityRange(Caps.bytes(2 * GIB)).putSecrets(SECRET, ROTATED)
        .build());
    assertThat(Luks2.status(mapping).sizeBytes()).as("the mapping grew with the map")
        .isEqualTo(mappingBefore + GIB).isGreaterThanOrEqualTo(2 * GIB);
    assertThat(Files.getFileStore(staging).getTotalSpace()).isGreaterThan(before + GIB / 2);
    assertThat(Files.readAllBytes(staging.resolve("kept.txt"))).isEqualTo(plain);

    f.unstage(v.getVolumeId(), staging);
    assertThat(Luks2.status(mapping).open()).isFalse();
    f.controller.controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setNodeId(f.backend.nodeId()).build());
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    assertThat(f.backend.leftoversOf(f.work, v.getVolumeContextMap()))
        .as("no session, node record, map, mapping, target or LUN file left").isEmpty();
    assertThat(pluginFilesContaining(PASSPHRASE.getBytes(StandardCharsets.UTF_8)))
        .as("files the plugin wrote holding the passphrase").isEmpty();
    assertThat(pluginFilesContaining(ROTATED.getBytes(StandardCharsets.UTF_8)))
        .as("files the plugin wrote holding the rotated passphrase").isEmpty();
  }

  /**
   * A LUN that holds a filesystem, staged as encrypted (its context says encryption=on), is refused with
   * FAILED_PRECONDITION naming what it holds; nothing is written, and the filesystem still mounts plain.
   */
  @Test
  void aLunHoldingAFilesystemIsNeverFormattedAsLuks2() throws IOException {
    Volume v = create("had-data", false);
    String iqn = v.getVolumeContextMap().get("targetIqn");
    Path staging = f.dir("staging/default/had-data/rw-file-system-single-node-writer");
    stage(v, staging, Map.of());
    Files.writeString(staging.resolve("kept.txt"), "plain data, seen on the target's LUN file");
    f.unstage(v.getVolumeId(), staging);
    // The oracle sees what a plain volume writes: its silence on an encrypted one means something.
    assertThat(lunFilesContaining("plain data, seen on the target's LUN file".getBytes(StandardCharsets.UTF_8)))
        .hasSize(1);

    Map<String, String> context = new HashMap<>(v.getVolumeContextMap());
    context.put("encryption", "on");
    StatusRuntimeException e = error(() -> f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).putAllVolumeContext(context).setStagingTargetPath(staging.toString())
        .setVolumeCapability(cap).putSecrets(SECRET, PASSPHRASE).build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(e.getStatus().getDescription()).contains("refusing to format", "ext4 filesystem")
        .doesNotContain(PASSPHRASE);
    assertThat(Luks2.status(mappingOf(wwid(v))).open()).isFalse();
    assertThat(MountTable.isMountPoint(staging)).isFalse();
    assertThat(Iscsi.system().sessions()).as("the refused stage logged out").noneMatch(s -> s.target().equals(iqn));

    stage(v, staging, Map.of());
    assertThat(Files.readString(staging.resolve("kept.txt"))).isEqualTo("plain data, seen on the target's LUN file");
    f.unstage(v.getVolumeId(), staging);
  }

  /**
   * An encrypted volume whose LUN got a filesystem before its first stage (written on the target's side)
   * is refused the same way: the never-reformat rule holds whatever the id says.
   */
  @Test
  void anEncryptedVolumesLunThatHoldsAFilesystemIsRefused() throws IOException, InterruptedException {
    Volume v = create("sealed-had-data", true);
    // Through the loop device the target serves the LUN from, so the target reads what was written.
    Path loop = lunLoopDevice();
    Process mkfs = new ProcessBuilder(List.of("mkfs.ext4", "-q", "-F", loop.toString())).inheritIO().start();
    assertThat(mkfs.waitFor()).isZero();
    Path staging = f.dir("staging/default/sealed-had-data/rw-file-system-single-node-writer");
    StatusRuntimeException e = error(() -> stage(v, staging, Map.of(SECRET, PASSPHRASE)));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(e.getStatus().getDescription()).contains("refusing to format", "ext4 filesystem")
        .doesNotContain(PASSPHRASE);
    assertThat(Luks2.status(mappingOf(wwid(v))).open()).isFalse();
    assertThat(Iscsi.system().sessions()).noneMatch(s -> s.target().equals(v.getVolumeContextMap().get("targetIqn")));
  }

  /** The loop device the LIO target serves the fixture's one LUN from: the appliance's disk, as it were. */
  private Path lunLoopDevice() throws IOException {
    Path found;
    try (Stream<Path> files = Files.list(f.work.resolve("lio"))) {
      List<Path> luns = files.filter(p -> p.getFileName().toString().startsWith("lun-")).toList();
      assertThat(luns).hasSize(1);
      found = luns.get(0);
    }
    Path lun = found;
    return dev.caravan.storage.block.LoopDevices.list().stream().filter(l -> l.backingFile().equals(lun))
        .map(dev.caravan.storage.block.LoopDevice::device).findFirst().orElseThrow();
  }

  /** The LUN files of the LIO targets (the appliance's disks, as it were) holding {@code needle}. */
  private List<Path> lunFilesContaining(byte[] needle) throws IOException {
    try (Stream<Path> files = Files.list(f.work.resolve("lio"))) {
      List<Path> luns = files.filter(p -> p.getFileName().toString().startsWith("lun-")).toList();
      assertThat(luns).as("LUN files under " + f.work.resolve("lio")).isNotEmpty();
      List<Path> out = new ArrayList<>();
      for (Path p : luns) {
        if (contains(p, needle)) {
          out.add(p);
        }
      }
      return out;
    }
  }

  /** Every file under the fixture's work directory but the target's LUN files that holds {@code needle}. */
  private List<Path> pluginFilesContaining(byte[] needle) throws IOException {
    Path lio = f.work.resolve("lio");
    try (Stream<Path> files = Files.walk(f.work)) {
      List<Path> out = new ArrayList<>();
      for (Path p : files.filter(Files::isRegularFile).filter(p -> !p.startsWith(lio)).toList()) {
        if (contains(p, needle)) {
          out.add(p);
        }
      }
      return out;
    }
  }

  /** A search in chunks (a LUN file is GiBs, mostly holes), overlapping by the needle's length. */
  private static boolean contains(Path file, byte[] needle) throws IOException {
    int chunk = 8 << 20;
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      ByteBuffer buf = ByteBuffer.allocate(chunk + needle.length);
      long pos = 0;
      long size = ch.size();
      while (pos < size) {
        buf.clear();
        int n = 0;
        while (buf.hasRemaining()) {
          int r = ch.read(buf, pos + n);
          if (r < 0) {
            break;
          }
          n += r;
        }
        byte[] got = new byte[n];
        System.arraycopy(buf.array(), 0, got, 0, n);
        if (Bytes.contains(got, needle)) {
          return true;
        }
        pos += chunk;
      }
    }
    return false;
  }
}
