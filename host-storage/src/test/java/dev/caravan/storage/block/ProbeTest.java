package dev.caravan.storage.block;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.SyscallException;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import dev.caravan.storage.testing.Signatures;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class ProbeTest {
  private static final long MIB = 1 << 20;
  private static final String UUID = "0b9ee6a2-5f2f-4a55-9a36-5ad0e0d6c0de";

  @RegisterExtension final Scratch scratch = new Scratch();

  @BeforeEach
  void requireLoopDevices() {
    HostRequirements.assumeRootWithLoopDevices();
  }

  @Test
  void anEmptyDeviceHasNoSignature() {
    Signature signature = probeImage(scratch.image("empty.img", 8 * MIB), image -> {});

    assertThat(signature.isEmpty()).isTrue();
    assertThat(signature.kind()).isEqualTo(Signature.Kind.NONE);
    assertThat(signature.type()).isEmpty();
  }

  @Test
  void ext4WithUuidAndLabel() {
    Signature signature =
        probeImage(
            scratch.image("ext4.img", 16 * MIB),
            image -> mkfs("mkfs.ext4", "-q", "-U", UUID, "-L", "caravan", image.toString()));

    assertThat(signature)
        .isEqualTo(
            new Signature(
                Optional.of("ext4"),
                Optional.of(UUID),
                Optional.of("caravan"),
                Signature.Kind.FILESYSTEM));
    assertThat(signature.describe()).isEqualTo("ext4 filesystem");
  }

  @Test
  void xfs() {
    HostRequirements.assumeTool("mkfs.xfs", "xfsprogs");
    Signature signature =
        probeImage(
            scratch.image("xfs.img", 320 * MIB),
            image -> mkfs("mkfs.xfs", "-q", "-m", "uuid=" + UUID, image.toString()));

    assertThat(signature.type()).contains("xfs");
    assertThat(signature.uuid()).contains(UUID);
    assertThat(signature.label()).isEmpty();
    assertThat(signature.kind()).isEqualTo(Signature.Kind.FILESYSTEM);
  }

  @Test
  void dosPartitionTable() {
    Signature signature = probeImage(scratch.image("mbr.img", 8 * MIB), Signatures::writeMbr);

    assertThat(signature.kind()).isEqualTo(Signature.Kind.PARTITION_TABLE);
    assertThat(signature.type()).contains("dos");
    assertThat(signature.describe()).isEqualTo("dos partition table");
    assertThat(signature.isEmpty()).isFalse();
  }

  @Test
  void lvmPhysicalVolume() {
    Signature signature = probeImage(scratch.image("pv.img", 8 * MIB), Signatures::writeLvm2Label);

    assertThat(signature.kind()).isEqualTo(Signature.Kind.RAID_MEMBER);
    assertThat(signature.type()).contains("LVM2_member");
    assertThat(signature.describe()).isEqualTo("LVM2_member");
  }

  @Test
  void luksHeader() {
    Signature signature = probeImage(scratch.image("luks.img", 8 * MIB), Signatures::writeLuks1);

    assertThat(signature.kind()).isEqualTo(Signature.Kind.CRYPTO);
    assertThat(signature.type()).contains("crypto_LUKS");
  }

  @Test
  void aMissingDeviceFailsWithItsErrno() {
    assertThatThrownBy(() -> Probe.probe(scratch.dir().resolve("no-such-device")))
        .isInstanceOfSatisfying(
            SyscallException.class, e -> assertThat(e.errnoName()).isEqualTo("ENOENT"));
  }

  @Test
  void anExclusiveProbeSeesWhatAPlainOneSees() {
    Path image = scratch.image("ext4.img", 16 * MIB);
    mkfs("mkfs.ext4", "-q", "-U", UUID, "-L", "caravan", image.toString());
    Path mbr = scratch.image("mbr.img", 8 * MIB);
    Signatures.writeMbr(mbr);
    LoopDevice ext4 = LoopDevices.attach(image, true);
    LoopDevice partitioned = LoopDevices.attach(mbr, true);
    LoopDevice empty = LoopDevices.attach(scratch.image("empty.img", 8 * MIB), true);
    try {
      for (LoopDevice loop : List.of(ext4, partitioned, empty)) {
        assertThat(Probe.probeExclusive(loop.device())).isEqualTo(Probe.probe(loop.device()));
      }
      assertThat(Probe.probeExclusive(ext4.device()).uuid()).contains(UUID);
    } finally {
      LoopDevices.detach(ext4);
      LoopDevices.detach(partitioned);
      LoopDevices.detach(empty);
    }
  }

  @Test
  void anExclusiveProbeIsRefusedWhileAnotherOpenerHoldsTheDevice() {
    LoopDevice loop = LoopDevices.attach(scratch.image("empty.img", 8 * MIB), false);
    try {
      try (Fd claim = Libc.open(loop.device(), LinuxUapi.O_RDONLY() | LinuxUapi.O_EXCL())) {
        assertThatThrownBy(() -> Probe.probeExclusive(loop.device()))
            .isInstanceOfSatisfying(
                SyscallException.class, e -> assertThat(e.errnoName()).isEqualTo("EBUSY"));
        assertThat(Probe.probe(loop.device()).isEmpty()).isTrue(); // a plain probe is no claim
      }
      assertThat(Probe.probeExclusive(loop.device()).isEmpty()).isTrue();
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void anExclusiveProbeNeedsABlockDevice() {
    Path file = scratch.image("plain-file.img", 8 * MIB);

    assertThatThrownBy(() -> Probe.probeExclusive(file))
        .isInstanceOf(StorageException.class)
        .hasMessage(file + " is not a block device");
  }

  /** Prepares the image file, then probes it through a loop device, as a real device would be. */
  private static Signature probeImage(Path image, Consumer<Path> prepare) {
    prepare.accept(image);
    LoopDevice loop = LoopDevices.attach(image, true);
    try {
      return Probe.probe(loop.device());
    } finally {
      LoopDevices.detach(loop);
    }
  }

  private static void mkfs(String... command) {
    ToolRunner.run(List.of(command), Duration.ofMinutes(1));
  }
}
