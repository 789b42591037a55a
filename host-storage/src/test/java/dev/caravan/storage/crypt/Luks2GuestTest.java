package dev.caravan.storage.crypt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.testing.Bytes;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** LUKS2 mappings on a real dm-crypt (the guest kernel of scripts/guest-suite). */
class Luks2GuestTest {
  private static final long MIB = 1L << 20;
  private static final byte[] PASSPHRASE = "correct horse battery".getBytes(StandardCharsets.UTF_8);
  private static final byte[] WRONG = "incorrect horse".getBytes(StandardCharsets.UTF_8);
  private static final byte[] NEXT = "rotated horse staple".getBytes(StandardCharsets.UTF_8);
  // The least work libcryptsetup accepts for a key slot: what these tests check does not depend on it, and under
  // emulation the default's second of argon2id is many seconds (Luks2Test checks the default).
  private static final KeySlotCost CHEAPEST = new KeySlotCost(Duration.ofMillis(1), 32, 1);

  @RegisterExtension final Scratch scratch = new Scratch();

  private Path image;
  private LoopDevice loop;
  private String name;

  @BeforeEach
  void attach() {
    HostRequirements.assumeDmCrypt();
    image = scratch.image("luks.img", 64 * MIB);
    loop = LoopDevices.attach(image, false);
    name = Luks2.mappingName("guest-test-" + System.nanoTime());
  }

  @AfterEach
  void detach() {
    if (loop != null) {
      Luks2.close(name);
      LoopDevices.detach(loop);
    }
  }

  @Test
  void opensWritesClosesAndReopensWithTheData() throws IOException {
    assertThat(Luks2.formatIfEmpty(loop.device(), PASSPHRASE, CHEAPEST)).isEqualTo(Luks2.FormatOutcome.FORMATTED);
    assertThat(Luks2.status(name).open()).isFalse();

    Path mapped = Luks2.open(loop.device(), name, PASSPHRASE);
    assertThat(mapped).isEqualTo(Path.of("/dev/mapper", name));
    Mapping open = Luks2.status(name);
    assertThat(open.open()).isTrue();
    assertThat(open.inUse()).isFalse();
    assertThat(BlockDevices.majorMinor(open.device().orElseThrow()))
        .isEqualTo(BlockDevices.majorMinor(loop.device()));
    // The LUKS2 header comes off the top.
    assertThat(open.offsetBytes()).isEqualTo(Luks2.HEADER_BYTES);
    assertThat(open.sizeBytes()).isEqualTo(64 * MIB - Luks2.HEADER_BYTES);
    assertThat(BlockDevices.size(mapped)).isEqualTo(open.sizeBytes());

    byte[] plain = "plaintext that must not reach the disk as is".getBytes(StandardCharsets.UTF_8);
    try (FileChannel out = FileChannel.open(mapped, StandardOpenOption.WRITE)) {
      out.write(ByteBuffer.wrap(plain), 0);
      out.force(true);
    }
    // Opening again with the passphrase is the same mapping.
    assertThat(Luks2.open(loop.device(), name, PASSPHRASE)).isEqualTo(mapped);
    Luks2.close(name);
    assertThat(Luks2.status(name).open()).isFalse();
    Luks2.close(name); // closing what is closed is nothing
    assertThat(Bytes.contains(Files.readAllBytes(image), plain)).isFalse();

    Luks2.open(loop.device(), name, PASSPHRASE);
    byte[] back = new byte[plain.length];
    try (FileChannel in = FileChannel.open(mapped, StandardOpenOption.READ)) {
      in.read(ByteBuffer.wrap(back), 0);
    }
    assertThat(back).isEqualTo(plain);
  }

  @Test
  void aWrongPassphraseOpensNothingAndIsRefusedEvenWhenTheMappingIsOpen() {
    Luks2.formatIfEmpty(loop.device(), PASSPHRASE, CHEAPEST);
    assertThatThrownBy(() -> Luks2.open(loop.device(), name, WRONG))
        .isInstanceOfSatisfying(
            WrongPassphraseException.class,
            e -> assertThat(e.device()).isEqualTo(loop.device()));
    assertThat(Luks2.status(name).open()).isFalse();

    Luks2.open(loop.device(), name, PASSPHRASE);
    assertThatThrownBy(() -> Luks2.open(loop.device(), name, WRONG))
        .isInstanceOf(WrongPassphraseException.class);
  }

  @Test
  void aPassphraseAddedThenTheOldOneRemovedOpensTheSameData() throws IOException {
    Luks2.formatIfEmpty(loop.device(), PASSPHRASE, CHEAPEST);
    Path mapped = Luks2.open(loop.device(), name, PASSPHRASE);
    byte[] plain = "data written under the first passphrase".getBytes(StandardCharsets.UTF_8);
    try (FileChannel out = FileChannel.open(mapped, StandardOpenOption.WRITE)) {
      out.write(ByteBuffer.wrap(plain), 0);
      out.force(true);
    }
    Luks2.close(name);
    int first = Luks2.slotOf(loop.device(), PASSPHRASE).orElseThrow();
    assertThat(Luks2.keySlots(loop.device())).containsExactly(first);

    assertThatThrownBy(() -> Luks2.addPassphrase(loop.device(), WRONG, NEXT, CHEAPEST))
        .isInstanceOf(WrongPassphraseException.class);
    assertThat(Luks2.keySlots(loop.device())).containsExactly(first);
    int added = Luks2.addPassphrase(loop.device(), PASSPHRASE, NEXT, CHEAPEST);
    assertThat(added).isNotEqualTo(first);
    assertThat(Luks2.keySlots(loop.device())).containsExactlyInAnyOrder(first, added);
    assertThat(Luks2.addPassphrase(loop.device(), PASSPHRASE, NEXT, CHEAPEST))
        .as("adding it again finds its slot and writes nothing")
        .isEqualTo(added);
    assertThat(Luks2.keySlots(loop.device())).hasSize(2);
    assertThat(Luks2.slotOf(loop.device(), PASSPHRASE)).hasValue(first);
    assertThat(Luks2.slotOf(loop.device(), NEXT)).hasValue(added);

    assertThat(Luks2.removePassphrase(loop.device(), PASSPHRASE, NEXT)).isTrue();
    assertThat(Luks2.keySlots(loop.device())).containsExactly(added);
    assertThat(Luks2.slotOf(loop.device(), PASSPHRASE)).isEmpty();
    assertThat(Luks2.removePassphrase(loop.device(), PASSPHRASE, NEXT)).as("removed already").isFalse();
    assertThatThrownBy(() -> Luks2.open(loop.device(), name, PASSPHRASE))
        .isInstanceOf(WrongPassphraseException.class);

    Luks2.open(loop.device(), name, NEXT);
    byte[] back = new byte[plain.length];
    try (FileChannel in = FileChannel.open(mapped, StandardOpenOption.READ)) {
      in.read(ByteBuffer.wrap(back), 0);
    }
    assertThat(back).isEqualTo(plain);
  }

  @Test
  void theLastPassphraseThatWouldOpenTheHeaderIsNeverRemoved() {
    Luks2.formatIfEmpty(loop.device(), PASSPHRASE, CHEAPEST);
    int only = Luks2.slotOf(loop.device(), PASSPHRASE).orElseThrow();
    assertThatThrownBy(() -> Luks2.removePassphrase(loop.device(), PASSPHRASE, PASSPHRASE))
        .as("the same passphrase opens no other slot")
        .isInstanceOf(WrongPassphraseException.class);
    assertThatThrownBy(() -> Luks2.removePassphrase(loop.device(), PASSPHRASE, NEXT))
        .as("a passphrase that opens nothing keeps nothing open")
        .isInstanceOf(WrongPassphraseException.class);
    assertThat(Luks2.keySlots(loop.device())).containsExactly(only);
    assertThat(Luks2.slotOf(loop.device(), PASSPHRASE)).hasValue(only);
  }

  @Test
  void aMappingInUseIsNotClosed() throws IOException {
    Luks2.formatIfEmpty(loop.device(), PASSPHRASE, CHEAPEST);
    Path mapped = Luks2.open(loop.device(), name, PASSPHRASE);
    try (FileChannel held = FileChannel.open(mapped, StandardOpenOption.READ)) {
      assertThat(Luks2.status(name).inUse()).isTrue();
      assertThatThrownBy(() -> Luks2.close(name))
          .isInstanceOf(StorageException.class)
          .hasMessageContaining("in use");
      assertThat(held.isOpen()).isTrue();
    }
    Luks2.close(name);
    assertThat(Luks2.status(name).open()).isFalse();
  }

  @Test
  void growsWithItsDevice() throws IOException {
    Luks2.formatIfEmpty(loop.device(), PASSPHRASE, CHEAPEST);
    Luks2.open(loop.device(), name, PASSPHRASE);
    long before = Luks2.status(name).sizeBytes();
    try (RandomAccessFile file = new RandomAccessFile(image.toFile(), "rw")) {
      file.setLength(128 * MIB);
    }
    LoopDevices.refreshCapacity(loop);
    assertThatThrownBy(() -> Luks2.resize(name, WRONG)).isInstanceOf(WrongPassphraseException.class);
    long after = Luks2.resize(name, PASSPHRASE);
    assertThat(after).isEqualTo(before + 64 * MIB);
    assertThat(Luks2.status(name).sizeBytes()).isEqualTo(after);
  }

  @Test
  void aMappingNameOpenOnAnotherDeviceIsRefused() {
    Luks2.formatIfEmpty(loop.device(), PASSPHRASE, CHEAPEST);
    LoopDevice other = LoopDevices.attach(scratch.image("other.img", 64 * MIB), false);
    try {
      Luks2.formatIfEmpty(other.device(), PASSPHRASE, CHEAPEST);
      Luks2.open(loop.device(), name, PASSPHRASE);
      assertThatThrownBy(() -> Luks2.open(other.device(), name, PASSPHRASE))
          .isInstanceOf(StorageException.class)
          .hasMessageContaining("is open on");
    } finally {
      LoopDevices.detach(other);
    }
  }
}
