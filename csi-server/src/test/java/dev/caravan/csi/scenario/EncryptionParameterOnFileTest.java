package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.GrpcOutcomes;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.storage.testing.Bytes;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The {@code encryption} CreateVolume parameter over the socket, on a backend that does not encrypt
 * here: a value other than off or on is refused naming the known values, {@code on} is refused naming
 * why, {@code off} makes a plain volume, and the passphrase sent along is in no answer and no file the
 * plugin wrote.
 */
class EncryptionParameterOnFileTest {
  private static final String PASSPHRASE = "Xq7-not-in-any-file-7qX";

  private PluginFixture f;

  @BeforeEach
  void start() throws IOException {
    f = PluginFixture.start(TestBackend.file());
  }

  @AfterEach
  void stop() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  private CreateVolumeRequest.Builder create(String name, String encryption) {
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(Caps.mount("ext4"))
        .setCapacityRange(Caps.bytes(32 * MIB)).putParameters("encryption", encryption)
        .putSecrets("encryptionPassphrase", PASSPHRASE);
  }

  @Test
  void anUnknownValueIsInvalidNamingTheParameterAndTheKnownValues() {
    StatusRuntimeException e = GrpcOutcomes.error(() -> f.controller.createVolume(create("v", "yes").build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(e.getStatus().getDescription()).contains("parameters.encryption").contains("off, on");
  }

  @Test
  void onIsRefusedNamingWhyAndNothingIsMade() throws IOException {
    if (f.plugin().backend().controller().encryptionUnavailable().isEmpty()) {
      org.junit.jupiter.api.Assumptions.abort("the file backend encrypts on this host; the refusal is for hosts"
          + " where it cannot");
    }
    StatusRuntimeException e = GrpcOutcomes.error(() -> f.controller.createVolume(create("v", "on").build()));
    assertThat(e.getStatus().getCode()).isEqualTo(Code.INVALID_ARGUMENT);
    assertThat(e.getStatus().getDescription()).contains("parameters.encryption=on cannot be honoured: ")
        .doesNotContain(PASSPHRASE);
    assertThat(f.storageObjects()).isEmpty();
  }

  @Test
  void offMakesAPlainVolumeAndThePassphraseIsInNoFileThePluginWrote() throws IOException {
    String id = f.controller.createVolume(create("v", "off").build()).getVolume().getVolumeId();
    assertThat(f.controller.createVolume(create("v", "off").build()).getVolume().getVolumeId()).isEqualTo(id);
    assertThat(f.storageObjects()).contains("volumes/" + id + ".img");
    GrpcOutcomes.error(() -> f.controller.createVolume(create("w", "on").build()));
    assertThat(filesContaining(f.work, PASSPHRASE)).isEmpty();
  }

  /** Every regular file below {@code root} whose bytes contain {@code text}. */
  static java.util.List<Path> filesContaining(Path root, String text) throws IOException {
    byte[] needle = text.getBytes(StandardCharsets.UTF_8);
    try (Stream<Path> files = Files.walk(root)) {
      return files.filter(Files::isRegularFile).filter(p -> contains(p, needle)).toList();
    }
  }

  private static boolean contains(Path file, byte[] needle) {
    try {
      return Bytes.contains(Files.readAllBytes(file), needle);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
