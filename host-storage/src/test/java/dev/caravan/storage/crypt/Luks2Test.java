package dev.caravan.storage.crypt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.DataPresentException;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.block.Signature;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** What needs no device-mapper: mapping names, and formatting (header writes) on loop devices. */
class Luks2Test {
  private static final long SIZE = 64L << 20;
  private static final byte[] PASSPHRASE = "correct horse battery".getBytes(StandardCharsets.UTF_8);

  @RegisterExtension final Scratch scratch = new Scratch();

  @Test
  void mappingNamesAreDeterministicDistinctAndValid() {
    String name = Luks2.mappingName("pvc-1/with spaces:and+symbols");
    assertThat(name).isEqualTo(Luks2.mappingName("pvc-1/with spaces:and+symbols"));
    assertThat(name).isNotEqualTo(Luks2.mappingName("pvc-2"));
    assertThat(name).matches("caravan-[0-9a-f]{32}");
  }

  @Test
  void anEmptyDeviceIsFormattedOnceAndThenLeftAlone() {
    HostRequirements.assumeRootWithLoopDevices();
    LoopDevice loop = LoopDevices.attach(scratch.image("empty.img", SIZE), false);
    try {
      assertThat(Luks2.formatIfEmpty(loop.device(), PASSPHRASE))
          .isEqualTo(Luks2.FormatOutcome.FORMATTED);
      Signature made = Probe.probe(loop.device());
      assertThat(made.type()).contains("crypto_LUKS");
      assertThat(made.kind()).isEqualTo(Signature.Kind.CRYPTO);
      String uuid = made.uuid().orElseThrow();
      // Another passphrase changes nothing: the header is kept, its key slots untouched.
      assertThat(Luks2.formatIfEmpty(loop.device(), "other".getBytes(StandardCharsets.UTF_8)))
          .isEqualTo(Luks2.FormatOutcome.ALREADY_LUKS2);
      assertThat(Probe.probe(loop.device()).uuid()).contains(uuid);
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void aDeviceWithAFilesystemIsNeverFormatted() {
    HostRequirements.assumeRootWithLoopDevices();
    HostRequirements.assumeTool("mkfs.ext4", "e2fsprogs");
    LoopDevice loop = LoopDevices.attach(scratch.image("ext4.img", SIZE), false);
    try {
      ToolRunner.run(List.of("mkfs.ext4", "-q", loop.device().toString()), Duration.ofMinutes(1));
      Optional<String> before = Probe.probe(loop.device()).uuid();
      assertThatThrownBy(() -> Luks2.formatIfEmpty(loop.device(), PASSPHRASE))
          .isInstanceOfSatisfying(
              DataPresentException.class,
              e -> {
                assertThat(e.found()).isEqualTo("ext4 filesystem");
                assertThat(e.getMessage()).doesNotContain(new String(PASSPHRASE, StandardCharsets.UTF_8));
              });
      Signature after = Probe.probe(loop.device());
      assertThat(after.type()).contains("ext4");
      assertThat(after.uuid()).isEqualTo(before);
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void anEmptyPassphraseIsRefusedBeforeTheDeviceIsTouched() {
    assertThatThrownBy(() -> Luks2.formatIfEmpty(scratch.dir().resolve("none"), new byte[0]))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("the passphrase is empty");
  }
}
