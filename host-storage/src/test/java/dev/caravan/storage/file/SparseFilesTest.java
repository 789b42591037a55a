package dev.caravan.storage.file;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.SyscallException;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.file.SparseFiles.CopyMethod;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class SparseFilesTest {
  private static final long MIB = 1 << 20;

  @RegisterExtension final Scratch scratch = new Scratch();

  @Test
  void createsASparseFileOnce() {
    Path file = scratch.dir().resolve("volume.img");

    SparseFiles.create(file, 1024 * MIB);

    assertThat(file).hasSize(1024 * MIB);
    assertThat(SparseFiles.allocatedBytes(file)).isLessThan(MIB);
    assertThatThrownBy(() -> SparseFiles.create(file, MIB))
        .isInstanceOfSatisfying(
            SyscallException.class, e -> assertThat(e.errnoName()).isEqualTo("EEXIST"));
    assertThat(file).hasSize(1024 * MIB);
  }

  @Test
  void growsButNeverShrinks() {
    Path file = scratch.image("volume.img", 8 * MIB);

    SparseFiles.grow(file, 16 * MIB);
    SparseFiles.grow(file, 16 * MIB);

    assertThat(file).hasSize(16 * MIB);
    assertThat(SparseFiles.allocatedBytes(file)).isLessThan(MIB);
    assertThatThrownBy(() -> SparseFiles.grow(file, 8 * MIB))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void copiesOnlyTheDataOfASparseFile() throws Exception {
    Path source = sparseFileWithData(scratch.dir().resolve("source.img"));
    Path target = scratch.dir().resolve("target.img");

    CopyMethod method = SparseFiles.cloneFile(source, target);

    assertSameContent(source, target);
    if (method == CopyMethod.SPARSE_COPY) {
      assertThat(SparseFiles.allocatedBytes(target)).isLessThan(8 * MIB);
    }
    assertThat(Files.getPosixFilePermissions(target))
        .isEqualTo(Files.getPosixFilePermissions(source));
    assertThatThrownBy(() -> SparseFiles.cloneFile(source, target))
        .isInstanceOfSatisfying(
            SyscallException.class, e -> assertThat(e.errnoName()).isEqualTo("EEXIST"));
  }

  @Test
  void reflinksOnXfs() throws Exception {
    HostRequirements.assumeRootWithLoopDevices();
    HostRequirements.assumeTool("mkfs.xfs", "xfsprogs");
    Path mnt = scratch.directory("xfs");
    LoopDevice loop = LoopDevices.attach(scratch.image("xfs.img", 320 * MIB), false);
    try {
      Filesystems.formatIfEmpty(loop.device(), FsType.XFS, List.of("-m", "reflink=1"));
      Mounts.mount(loop.device(), mnt, "xfs", Set.of(), null);
      Path source = sparseFileWithData(mnt.resolve("source.img"));

      assertThat(SparseFiles.cloneFile(source, mnt.resolve("clone.img")))
          .isEqualTo(CopyMethod.REFLINK);
      assertSameContent(source, mnt.resolve("clone.img"));
    } finally {
      Mounts.unmount(mnt);
      LoopDevices.detach(loop);
    }
  }

  @Test
  void copiesAcrossFilesystems() throws Exception {
    HostRequirements.assumeRootWithLoopDevices();
    Path mnt = scratch.directory("ext4");
    LoopDevice loop = LoopDevices.attach(scratch.image("ext4.img", 64 * MIB), false);
    try {
      Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of());
      Mounts.mount(loop.device(), mnt, "ext4", Set.of(), null);
      Path source = sparseFileWithData(scratch.dir().resolve("source.img"));
      Path target = mnt.resolve("copy.img");

      // copy_file_range refuses (EXDEV) between two ext4 filesystems: read and write it is.
      assertThat(SparseFiles.cloneFile(source, target)).isEqualTo(CopyMethod.SPARSE_COPY);

      assertSameContent(source, target);
      assertThat(SparseFiles.allocatedBytes(target)).isLessThan(8 * MIB);
    } finally {
      Mounts.unmount(mnt);
      LoopDevices.detach(loop);
    }
  }

  /** 32 MiB with 3 MiB of data in three places and holes between. */
  private static Path sparseFileWithData(Path file) throws Exception {
    SparseFiles.create(file, 32 * MIB);
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r-----"));
    Random random = new Random(7);
    try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
      for (long offset : new long[] {0, 10 * MIB + 4096, 31 * MIB}) {
        byte[] data = new byte[(int) MIB];
        random.nextBytes(data);
        channel.write(ByteBuffer.wrap(data), offset);
      }
      channel.force(true);
    }
    return file;
  }

  private static void assertSameContent(Path expected, Path actual) throws Exception {
    assertThat(actual).hasSize(Files.size(expected));
    assertThat(Files.mismatch(expected, actual)).isEqualTo(-1);
  }
}
