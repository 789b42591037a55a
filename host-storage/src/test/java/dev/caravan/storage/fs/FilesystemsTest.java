package dev.caravan.storage.fs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.DataPresentException;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.file.SparseFiles;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import dev.caravan.storage.testing.Signatures;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class FilesystemsTest {
  private static final long MIB = 1 << 20;

  @RegisterExtension final Scratch scratch = new Scratch();

  @BeforeEach
  void requireLoopDevices() {
    HostRequirements.assumeRootWithLoopDevices();
  }

  @Test
  void formatsAnEmptyDeviceOnce() {
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", 32 * MIB), false);
    try {
      assertThat(Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of("-L", "data")))
          .isEqualTo(FormatOutcome.FORMATTED);
      String uuid = Probe.probe(loop.device()).uuid().orElseThrow();

      assertThat(Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of()))
          .isEqualTo(FormatOutcome.ALREADY_FORMATTED);
      assertThat(Probe.probe(loop.device()).uuid()).contains(uuid);
      assertThat(Probe.probe(loop.device()).label()).contains("data");
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void neverFormatsOverAnotherFilesystem() throws Exception {
    HostRequirements.assumeTool("mkfs.xfs", "xfsprogs");
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", 320 * MIB), false);
    Path mnt = scratch.directory("mnt");
    try {
      Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of());
      Mounts.mount(loop.device(), mnt, "ext4", Set.of(), null);
      Files.writeString(mnt.resolve("precious"), "data");
      Mounts.unmount(mnt);

      assertThatThrownBy(() -> Filesystems.formatIfEmpty(loop.device(), FsType.XFS, List.of()))
          .isInstanceOfSatisfying(
              DataPresentException.class,
              e -> {
                assertThat(e.device()).isEqualTo(loop.device());
                assertThat(e.found()).isEqualTo("ext4 filesystem");
              });

      Mounts.mount(loop.device(), mnt, "ext4", Set.of(), null);
      assertThat(mnt.resolve("precious")).hasContent("data");
      Mounts.unmount(mnt);
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void neverFormatsOverAPartitionTableAVolumeManagerMemberOrACryptoHeader() {
    Path mbr = scratch.image("mbr.img", 8 * MIB);
    Signatures.writeMbr(mbr);
    Path pv = scratch.image("pv.img", 8 * MIB);
    Signatures.writeLvm2Label(pv);
    Path luks = scratch.image("luks.img", 8 * MIB);
    Signatures.writeLuks1(luks);
    LoopDevice mbrLoop = LoopDevices.attach(mbr, false);
    LoopDevice pvLoop = LoopDevices.attach(pv, false);
    LoopDevice luksLoop = LoopDevices.attach(luks, false);
    try {
      assertThatThrownBy(() -> Filesystems.formatIfEmpty(mbrLoop.device(), FsType.EXT4, List.of()))
          .isInstanceOfSatisfying(
              DataPresentException.class,
              e -> assertThat(e.found()).isEqualTo("dos partition table"));
      assertThatThrownBy(() -> Filesystems.formatIfEmpty(pvLoop.device(), FsType.EXT4, List.of()))
          .isInstanceOfSatisfying(
              DataPresentException.class, e -> assertThat(e.found()).isEqualTo("LVM2_member"));
      assertThatThrownBy(() -> Filesystems.formatIfEmpty(luksLoop.device(), FsType.XFS, List.of()))
          .isInstanceOfSatisfying(
              DataPresentException.class, e -> assertThat(e.found()).isEqualTo("crypto_LUKS"));
      assertThat(Probe.probe(mbrLoop.device()).type()).contains("dos");
      assertThat(Probe.probe(pvLoop.device()).type()).contains("LVM2_member");
      assertThat(Probe.probe(luksLoop.device()).type()).contains("crypto_LUKS");
    } finally {
      LoopDevices.detach(mbrLoop);
      LoopDevices.detach(pvLoop);
      LoopDevices.detach(luksLoop);
    }
  }

  @Test
  void statsCountWhatWasWritten() throws Exception {
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", 64 * MIB), false);
    Path mnt = scratch.directory("mnt");
    try {
      Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of());
      Mounts.mount(loop.device(), mnt, "ext4", Set.of(), null);
      FsStats before = Filesystems.stats(mnt);
      assertThat(before.totalBytes()).isBetween(50 * MIB, 64 * MIB);
      assertThat(before.availableBytes())
          .isLessThanOrEqualTo(before.totalBytes() - before.usedBytes());
      assertThat(before.usedInodes() + before.freeInodes()).isEqualTo(before.totalInodes());

      byte[] data = new byte[(int) (8 * MIB)];
      new Random(42).nextBytes(data);
      try (FileChannel file =
          FileChannel.open(
              mnt.resolve("data"), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
        file.write(ByteBuffer.wrap(data));
        file.force(true);
      }
      FsStats after = Filesystems.stats(mnt);

      assertThat(after.totalBytes()).isEqualTo(before.totalBytes());
      assertThat(after.usedBytes() - before.usedBytes()).isGreaterThanOrEqualTo(8 * MIB);
      assertThat(before.availableBytes() - after.availableBytes()).isGreaterThanOrEqualTo(8 * MIB);
      assertThat(after.usedInodes()).isEqualTo(before.usedInodes() + 1);
      Mounts.unmount(mnt);
    } finally {
      Mounts.unmount(mnt);
      LoopDevices.detach(loop);
    }
  }

  @Test
  void growsExt4Online() throws Exception {
    HostRequirements.assumeCapSysResource();
    growsOnline(FsType.EXT4, 64 * MIB);
  }

  @Test
  void growsXfsOnline() throws Exception {
    HostRequirements.assumeTool("mkfs.xfs", "xfsprogs");
    growsOnline(FsType.XFS, 320 * MIB);
  }

  @Test
  void readsTheFilesystemSizeFromItsSuperblock() {
    HostRequirements.assumeTool("mkfs.xfs", "xfsprogs");
    for (FsType type : FsType.values()) {
      long size = 320 * MIB;
      LoopDevice loop = LoopDevices.attach(scratch.image(type.id() + ".img", size), false);
      try {
        Filesystems.formatIfEmpty(loop.device(), type, List.of());
        assertThat(Filesystems.size(loop.device(), type)).as(type.id()).isEqualTo(size);
        assertThatThrownBy(() -> Filesystems.size(loop.device(), other(type)))
            .isInstanceOf(StorageException.class)
            .hasMessageContaining("holds no " + other(type).id() + " superblock");
      } finally {
        LoopDevices.detach(loop);
      }
    }
  }

  @Test
  void growsUnmountedExt4WithoutTouchingItsData() throws Exception {
    Path image = scratch.image("disk.img", 64 * MIB);
    LoopDevice loop = LoopDevices.attach(image, false);
    Path mnt = scratch.directory("mnt");
    try {
      Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of());
      Mounts.mount(loop.device(), mnt, "ext4", Set.of(), null);
      Files.writeString(mnt.resolve("kept"), "across the grow");
      assertThatThrownBy(() -> Filesystems.growUnmounted(loop.device(), FsType.EXT4))
          .isInstanceOf(StorageException.class)
          .hasMessageContaining("is mounted at " + mnt);
      Mounts.unmount(mnt);

      SparseFiles.grow(image, 128 * MIB);
      LoopDevices.refreshCapacity(loop);
      assertThat(Filesystems.size(loop.device(), FsType.EXT4)).isEqualTo(64 * MIB);
      Filesystems.growUnmounted(loop.device(), FsType.EXT4);
      assertThat(Filesystems.size(loop.device(), FsType.EXT4)).isEqualTo(128 * MIB);

      Mounts.mount(loop.device(), mnt, "ext4", Set.of(), null);
      assertThat(mnt.resolve("kept")).hasContent("across the grow");
      assertThat(Filesystems.stats(mnt).totalBytes()).isGreaterThan(100 * MIB);
    } finally {
      Mounts.unmount(mnt);
      LoopDevices.detach(loop);
    }
  }

  @Test
  void refusesToGrowXfsUnmounted() {
    assertThatThrownBy(() -> Filesystems.growUnmounted(Path.of("/dev/null"), FsType.XFS))
        .isInstanceOf(StorageException.class)
        .hasMessageContaining("xfs grows only while mounted");
  }

  private static FsType other(FsType type) {
    return type == FsType.EXT4 ? FsType.XFS : FsType.EXT4;
  }

  private void growsOnline(FsType type, long size) throws Exception {
    Path image = scratch.image("disk.img", size);
    LoopDevice loop = LoopDevices.attach(image, false);
    Path mnt = scratch.directory("mnt");
    try {
      Filesystems.formatIfEmpty(loop.device(), type, List.of());
      Mounts.mount(loop.device(), mnt, type.id(), Set.of(), null);
      Files.writeString(mnt.resolve("kept"), "across the grow");
      long before = Filesystems.stats(mnt).totalBytes();

      SparseFiles.grow(image, 2 * size);
      LoopDevices.refreshCapacity(loop);
      assertThat(BlockDevices.size(loop.device())).isEqualTo(2 * size);
      Filesystems.grow(mnt);

      long after = Filesystems.stats(mnt).totalBytes();
      assertThat(after).isGreaterThan(before + size * 9 / 10);
      assertThat(mnt.resolve("kept")).hasContent("across the grow");
    } finally {
      Mounts.unmount(mnt);
      LoopDevices.detach(loop);
    }
  }

  @Test
  void writesWaitWhileFrozen() throws Exception {
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", 32 * MIB), false);
    Path mnt = scratch.directory("mnt");
    try {
      Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of());
      Mounts.mount(loop.device(), mnt, "ext4", Set.of(), null);
      CompletableFuture<Void> write;
      try (Frozen frozen = Filesystems.freeze(mnt)) {
        assertThat(frozen.mountPoint()).isEqualTo(mnt);
        write =
            CompletableFuture.runAsync(
                () -> {
                  try {
                    Files.writeString(mnt.resolve("written-while-frozen"), "late");
                  } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                  }
                });
        // Not a speed assertion: a write to a frozen filesystem cannot finish at all until thawed.
        assertThatThrownBy(() -> write.get(500, TimeUnit.MILLISECONDS))
            .isInstanceOf(TimeoutException.class);
      }
      write.get(1, TimeUnit.MINUTES);
      assertThat(mnt.resolve("written-while-frozen")).hasContent("late");
    } finally {
      Mounts.unmount(mnt);
      LoopDevices.detach(loop);
    }
  }

  @Test
  void whileFrozenThawsWhenTheActionFails() throws Exception {
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", 32 * MIB), false);
    Path mnt = scratch.directory("mnt");
    try {
      Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of());
      Mounts.mount(loop.device(), mnt, "ext4", Set.of(), null);

      assertThat(Filesystems.whileFrozen(mnt, () -> "snapshot taken")).isEqualTo("snapshot taken");
      assertThatThrownBy(
              () ->
                  Filesystems.whileFrozen(
                      mnt,
                      () -> {
                        throw new IllegalStateException("snapshot failed");
                      }))
          .hasMessage("snapshot failed");

      // Freezing a frozen filesystem fails (EBUSY), so this succeeding shows it was thawed.
      Filesystems.freeze(mnt).close();
      Files.writeString(mnt.resolve("after"), "thawed");
    } finally {
      Mounts.unmount(mnt);
      LoopDevices.detach(loop);
    }
  }

  @Test
  void thawEndsAFreezeWhoseHolderIsGone() throws Exception {
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", 32 * MIB), false);
    Path mnt = scratch.directory("mnt");
    try {
      Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of());
      Mounts.mount(loop.device(), mnt, "ext4", Set.of(), null);
      assertThat(Filesystems.thaw(mnt)).as("thaw of a filesystem nobody froze").isFalse();

      Frozen lost = Filesystems.freeze(mnt); // as a process that died holding it leaves it
      assertThat(Filesystems.thaw(mnt)).as("thaw of the frozen filesystem").isTrue();
      CompletableFuture.runAsync(
              () -> {
                try {
                  Files.writeString(mnt.resolve("after"), "thawed");
                } catch (java.io.IOException e) {
                  throw new java.io.UncheckedIOException(e);
                }
              })
          .get(30, TimeUnit.SECONDS);
      assertThat(Filesystems.thaw(mnt)).as("second thaw").isFalse();
      assertThatThrownBy(lost::close).isInstanceOf(StorageException.class); // FITHAW: EINVAL, not frozen
    } finally {
      Mounts.unmount(mnt);
      LoopDevices.detach(loop);
    }
  }

  @Test
  void refusesToFreezeOrGrowWhatIsNotAMountPoint() throws Exception {
    Path plain = scratch.directory("plain");

    assertThatThrownBy(() -> Filesystems.freeze(plain))
        .isInstanceOf(StorageException.class)
        .hasMessage(plain + " is not a mount point");
    assertThatThrownBy(() -> Filesystems.grow(plain))
        .isInstanceOf(StorageException.class)
        .hasMessage(plain + " is not a mount point");
  }

  @Test
  void fsTypesById() {
    assertThat(FsType.parse("ext4")).contains(FsType.EXT4);
    assertThat(FsType.parse("xfs")).contains(FsType.XFS);
    assertThat(FsType.parse("btrfs")).isEmpty();
  }
}
