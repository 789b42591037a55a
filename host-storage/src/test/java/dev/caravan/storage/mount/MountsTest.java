package dev.caravan.storage.mount;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.MountConflictException;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.SyscallException;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.file.SparseFiles;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class MountsTest {
  private static final long MIB = 1 << 20;

  @RegisterExtension final Scratch scratch = new Scratch();

  private LoopDevice loop;
  private Path mnt;

  @BeforeEach
  void ext4Device() throws Exception {
    HostRequirements.assumeRootWithLoopDevices();
    loop = ext4Loop("disk.img");
    mnt = scratch.directory("mnt");
  }

  @AfterEach
  void detach() {
    if (loop != null) {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void mountingAndUnmountingAreIdempotent() throws Exception {
    Mounts.mount(loop.device(), mnt, "ext4", Set.of(MountFlag.NO_ATIME), null);
    Mounts.mount(loop.device(), mnt, "ext4", Set.of(MountFlag.NO_ATIME), null);

    MountEntry entry = MountTable.at(mnt).orElseThrow();
    assertThat(entry.source()).isEqualTo(loop.device().toString());
    assertThat(entry.fsType()).isEqualTo("ext4");
    assertThat(entry.mountOptions()).contains("noatime");
    assertThat(MountTable.read()).filteredOn(e -> e.mountPoint().equals(mnt)).hasSize(1);
    Files.writeString(mnt.resolve("hello"), "world");

    assertThat(Mounts.unmount(mnt)).isTrue();
    assertThat(Mounts.unmount(mnt)).isFalse();
    assertThat(MountTable.isMountPoint(mnt)).isFalse();
    assertThat(mnt.resolve("hello")).doesNotExist();
  }

  @Test
  void passesFilesystemData() {
    Mounts.mount(loop.device(), mnt, "ext4", Set.of(), "errors=remount-ro,commit=7");
    try {
      assertThat(MountTable.at(mnt).orElseThrow().superOptions()).contains("commit=7");
    } finally {
      Mounts.unmount(mnt);
    }
  }

  @Test
  void anotherSourceAtTheTargetIsAConflict() throws Exception {
    LoopDevice other = ext4Loop("other.img");
    Mounts.mount(loop.device(), mnt, "ext4", Set.of(), null);
    try {
      assertThatThrownBy(() -> Mounts.mount(other.device(), mnt, "ext4", Set.of(), null))
          .isInstanceOfSatisfying(
              MountConflictException.class,
              e -> {
                assertThat(e.target()).isEqualTo(mnt);
                assertThat(e.existingSource()).isEqualTo(loop.device().toString());
              });
      assertThatThrownBy(
              () -> Mounts.mount(loop.device(), mnt, "ext4", Set.of(MountFlag.READ_ONLY), null))
          .isInstanceOf(MountConflictException.class)
          .hasMessageContaining("mounted read-write");
      assertThatThrownBy(() -> Mounts.bind(scratch.dir(), mnt, false))
          .isInstanceOf(MountConflictException.class);
    } finally {
      Mounts.unmount(mnt);
      LoopDevices.detach(other);
    }
  }

  @Test
  void bindsDirectoriesReadWriteAndReadOnly() throws Exception {
    Mounts.mount(loop.device(), mnt, "ext4", Set.of(MountFlag.NO_SUID, MountFlag.NO_DEV), null);
    Path data = Files.createDirectory(mnt.resolve("data"));
    Path rw = scratch.directory("rw");
    Path ro = scratch.directory("ro");
    try {
      Mounts.bind(data, rw, false);
      Mounts.bind(data, ro, true);
      Mounts.bind(data, rw, false);
      Mounts.bind(data, ro, true);

      Files.writeString(rw.resolve("through-rw"), "x");
      assertThat(data.resolve("through-rw")).hasContent("x");
      assertThat(ro.resolve("through-rw")).hasContent("x");
      assertThatThrownBy(() -> SparseFiles.create(ro.resolve("through-ro"), 1))
          .isInstanceOfSatisfying(
              SyscallException.class,
              e -> {
                assertThat(e.errnoName()).isEqualTo("EROFS");
                assertThat(e.operation()).isEqualTo("open");
              });
      MountEntry roEntry = MountTable.at(ro).orElseThrow();
      assertThat(roEntry.root()).isEqualTo("/data");
      assertThat(roEntry.readOnly()).isTrue();
      // The read-only remount kept the restrictions the bind inherited from its source.
      assertThat(roEntry.mountOptions().split(",", -1)).contains("ro", "nosuid", "nodev");
      assertThatThrownBy(() -> Mounts.bind(data, ro, false))
          .isInstanceOf(MountConflictException.class)
          .hasMessageContaining("mounted read-only");
      assertThatThrownBy(() -> Mounts.bind(mnt, rw, false))
          .isInstanceOf(MountConflictException.class)
          .hasMessageContaining("not a bind of " + mnt);
    } finally {
      Mounts.unmount(ro);
      Mounts.unmount(rw);
      Mounts.unmount(mnt);
    }
  }

  @Test
  void bindsADeviceNodeOntoAFile() throws Exception {
    Path node = Files.createFile(scratch.dir().resolve("block-volume"));

    Mounts.bind(loop.device(), node, false);
    try {
      Mounts.bind(loop.device(), node, false);
      assertThat(BlockDevices.size(node)).isEqualTo(32 * MIB);
      assertThat(MountTable.isMountPoint(node)).isTrue();
    } finally {
      assertThat(Mounts.unmount(node)).isTrue();
    }
    assertThat(Files.size(node)).isZero();
  }

  @Test
  void aMissingDeviceFailsWithENOENT() {
    Path missing = scratch.dir().resolve("no-such-device");

    assertThatThrownBy(() -> Mounts.mount(missing, mnt, "ext4", Set.of(), null))
        .isInstanceOfSatisfying(
            SyscallException.class,
            e -> {
              assertThat(e.errnoName()).isEqualTo("ENOENT");
              assertThat(e.errno()).isEqualTo(2);
              assertThat(e.operation()).isEqualTo("mount");
              assertThat(e.arguments())
                  .containsExactly(missing.toString(), mnt.toString(), "ext4", "0x0");
              assertThat(e)
                  .hasMessage(
                      "mount(%s, %s, ext4, 0x0) failed: ENOENT (No such file or directory)",
                      missing, mnt);
            });
  }

  @Test
  void aSymlinkAtTheTargetIsNeverFollowed() throws Exception {
    Mounts.mount(loop.device(), mnt, "ext4", Set.of(), null);
    Path elsewhere = scratch.directory("elsewhere");
    Path link = Files.createSymbolicLink(scratch.dir().resolve("link"), mnt);
    try {
      assertThat(MountTable.isMountPoint(link)).as("a symlink is never a mount point").isFalse();
      assertThat(Mounts.unmount(link)).isFalse();
      assertThat(MountTable.isMountPoint(mnt)).as("the mount the symlink points at").isTrue();
      assertThatThrownBy(() -> Mounts.bind(elsewhere, link, false))
          .isInstanceOf(StorageException.class)
          .hasMessageContaining("symlink");
      assertThatThrownBy(() -> Mounts.mount(loop.device(), link, "ext4", Set.of(), null))
          .isInstanceOf(StorageException.class)
          .hasMessageContaining("symlink");
      assertThat(MountTable.read()).filteredOn(e -> e.mountPoint().equals(mnt)).hasSize(1);
    } finally {
      Mounts.unmount(mnt);
    }
    assertThat(MountTable.isMountPoint(mnt)).isFalse();
  }

  @Test
  void unmountingWhatIsNotMountedIsFalse() {
    assertThat(Mounts.unmount(mnt)).isFalse();
    assertThat(Mounts.unmount(scratch.dir().resolve("missing"))).isFalse();
  }

  private LoopDevice ext4Loop(String name) {
    LoopDevice device = LoopDevices.attach(scratch.image(name, 32 * MIB), false);
    Filesystems.formatIfEmpty(device.device(), FsType.EXT4, List.of("-q"));
    return device;
  }
}
