package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.observe.inspect.Chain;
import dev.caravan.csi.support.Json;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeExpandVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.block.Signature;
import dev.caravan.storage.crypt.Luks2;
import dev.caravan.storage.crypt.Mapping;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.testing.Bytes;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * An encrypted ({@code encryption=on}) file volume end to end through the CSI socket, on a real
 * dm-crypt (the guest): the loop device holds LUKS2, the filesystem lives on the mapping, a wrong
 * passphrase stages nothing and formats nothing, the right one reads the data back, and the volume
 * grows through ControllerExpandVolume and NodeExpandVolume. {@code caravan inspect} shows the mapping
 * as the volume's device, open over its loop device, and closed after unstage. The passphrase is in no
 * file the plugin wrote, nor in what inspect shows.
 */
class LuksOnFileGuestTest {
  private static final String PASSPHRASE = "luks-e2e-passphrase-Kd81";
  private static final String SECRET = "encryptionPassphrase";
  private static final long SIZE = 64 * MIB;

  private PluginFixture f;
  private final VolumeCapability cap = Caps.mount("ext4");

  @BeforeEach
  void start() throws IOException {
    f = PluginFixture.start(TestBackend.fileEncrypted());
  }

  @AfterEach
  void stop() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  private Volume create(String name) {
    return f.controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(SIZE)).putParameters("encryption", "on").putSecrets(SECRET, PASSPHRASE)
        .build()).getVolume();
  }

  private void stage(Volume v, Path staging, String passphrase) {
    f.stage(v, staging, cap, Map.of(SECRET, passphrase));
  }

  @Test
  void stagesOnAMappingRefusesAWrongPassphraseReadsTheDataBackAndGrows() throws IOException {
    Volume v = create("secret-vol");
    assertThat(v.getVolumeContextMap()).containsEntry("encryption", "on");
    Path image = f.work.resolve("data/volumes").resolve(v.getVolumeId() + ".img");
    Path staging = f.dir("staging/secret-vol");

    stage(v, staging, PASSPHRASE);
    String mapping = mappingOn(image).orElseThrow();
    assertThat(MountTable.read()).anySatisfy(m -> {
      assertThat(m.mountPoint()).isEqualTo(staging);
      assertThat(m.source()).isIn("/dev/mapper/" + mapping, "/dev/" + dmName(mapping));
    });
    assertThat(Luks2.status(mapping).open()).isTrue();
    assertThat(Luks2.status(mapping).sizeBytes()).as("the mapping holds the whole capacity").isEqualTo(SIZE);
    // caravan inspect: the mapping is the volume's device, open over its loop device; no layer disagrees,
    // and nothing of the passphrase is shown.
    Chain staged = inspect(v);
    assertThat(backendProperties(staged)).containsEntry("encrypted", "yes")
        .containsEntry("luks2.mapping", "/dev/mapper/" + mapping).containsEntry("luks2.open", "yes")
        .containsEntry("luks2.device", Luks2.status(mapping).device().orElseThrow().toString());
    assertThat(layer(staged, "attachment")).as("%s", staged.toText()).containsEntry("state", "ok");
    assertThat(staged.findings()).as("%s", staged.toText()).isEmpty();
    assertThat(Json.write(staged.toJson())).doesNotContain(PASSPHRASE);
    Signature onLoop = Probe.probe(Luks2.status(mapping).device().orElseThrow());
    assertThat(onLoop.type()).contains("crypto_LUKS");
    String luksUuid = onLoop.uuid().orElseThrow();
    byte[] plain = "data written through the mapping, never plain on disk".getBytes(StandardCharsets.UTF_8);
    Files.write(staging.resolve("kept.txt"), plain);
    f.unstage(v.getVolumeId(), staging);
    assertThat(Luks2.status(mapping).open()).as("mapping closed at unstage").isFalse();
    assertThat(f.ourLoops()).as("loop device detached at unstage").isEmpty();
    assertThat(backendProperties(inspect(v))).containsEntry("luks2.open", "no").doesNotContainKey("luks2.device");
    assertThat(Bytes.contains(Files.readAllBytes(image), plain)).as("plaintext in the image").isFalse();

    // A wrong passphrase: UNAUTHENTICATED naming the secret, nothing staged, nothing opened, nothing written.
    StatusRuntimeException wrong = error(() -> stage(v, staging, "not-the-passphrase"));
    assertThat(wrong.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED);
    assertThat(wrong.getStatus().getDescription()).contains("secrets." + SECRET).doesNotContain("not-the-passphrase");
    assertThat(MountTable.isMountPoint(staging)).isFalse();
    assertThat(mappingOn(image)).isEmpty();
    assertThat(f.ourLoops()).isEmpty();
    // A missing one: the same code, naming the secret.
    StatusRuntimeException missing = error(() -> f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).putAllVolumeContext(v.getVolumeContextMap())
        .setStagingTargetPath(staging.toString()).setVolumeCapability(cap).build()));
    assertThat(missing.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED);
    assertThat(missing.getStatus().getDescription()).contains("secrets." + SECRET);

    stage(v, staging, PASSPHRASE);
    assertThat(Files.readAllBytes(staging.resolve("kept.txt"))).isEqualTo(plain);
    assertThat(Probe.probe(Luks2.status(mapping).device().orElseThrow()).uuid())
        .as("the LUKS2 header was never rewritten").contains(luksUuid);

    long before = Files.getFileStore(staging).getTotalSpace();
    f.controller.controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setCapacityRange(Caps.bytes(2 * SIZE)).setVolumeCapability(cap).build());
    StatusRuntimeException noKey = error(() -> f.node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder()
        .setVolumeId(v.getVolumeId()).setVolumePath(staging.toString()).build()));
    assertThat(noKey.getStatus().getCode()).isEqualTo(Code.UNAUTHENTICATED);
    long grown = f.node.nodeExpandVolume(NodeExpandVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .setVolumePath(staging.toString()).setCapacityRange(Caps.bytes(2 * SIZE)).putSecrets(SECRET, PASSPHRASE)
        .build()).getCapacityBytes();
    assertThat(grown).isEqualTo(2 * SIZE);
    assertThat(Luks2.status(mapping).sizeBytes()).isEqualTo(2 * SIZE);
    assertThat(Files.getFileStore(staging).getTotalSpace()).isGreaterThan(before + SIZE / 2);
    assertThat(Files.readAllBytes(staging.resolve("kept.txt"))).isEqualTo(plain);

    f.unstage(v.getVolumeId(), staging);
    assertThat(Luks2.status(mapping).open()).isFalse();
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    assertThat(EncryptionParameterOnFileTest.filesContaining(f.work, PASSPHRASE)).isEmpty();
  }

  @Test
  void aLoopDeviceHoldingAFilesystemIsNeverFormattedAsLuks2() throws IOException, InterruptedException {
    Volume v = create("had-data");
    Path image = f.work.resolve("data/volumes").resolve(v.getVolumeId() + ".img");
    Process mkfs = new ProcessBuilder(List.of("mkfs.ext4", "-q", "-F", image.toString())).inheritIO().start();
    assertThat(mkfs.waitFor()).isZero();
    Path staging = f.dir("staging/had-data");
    StatusRuntimeException e = error(() -> stage(v, staging, PASSPHRASE));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(e.getStatus().getDescription()).contains("ext4 filesystem").doesNotContain(PASSPHRASE);
    assertThat(f.ourLoops()).isEmpty();
    assertThat(mappingOn(image)).isEmpty();
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

  /** The open caravan mapping whose device is a loop device over {@code image}. */
  private static Optional<String> mappingOn(Path image) throws IOException {
    try (Stream<Path> names = Files.list(Path.of("/dev/mapper"))) {
      for (Path p : names.filter(n -> n.getFileName().toString().startsWith("caravan-")).toList()) {
        Mapping m = Luks2.status(p.getFileName().toString());
        if (m.open() && m.device().filter(d -> LoopDevices.backs(d, image)).isPresent()) {
          return Optional.of(m.name());
        }
      }
    }
    return Optional.empty();
  }

  /** The kernel's dm-N name of a mapping, as the mount table may show it. */
  private static String dmName(String mapping) throws IOException {
    Path link = Path.of("/dev/mapper", mapping);
    return Files.isSymbolicLink(link) ? Files.readSymbolicLink(link).getFileName().toString() : mapping;
  }
}
