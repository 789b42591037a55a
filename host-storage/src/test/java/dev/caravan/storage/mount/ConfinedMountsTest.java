package dev.caravan.storage.mount;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.MountConflictException;
import dev.caravan.storage.PathEscapeException;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The resolve-and-mount primitives on real directories and a real ext4 loop device, each in both
 * ways a kernel may allow: descriptors (openat2, open_tree/fsmount, move_mount) and the older
 * kernels' O_NOFOLLOW walk with mount(2) through /proc/self/fd.
 */
class ConfinedMountsTest {
  private static final long MIB = 1 << 20;

  @RegisterExtension final Scratch scratch = new Scratch();

  private Path root;
  private Path outside;

  @BeforeEach
  void dirs() throws IOException {
    HostRequirements.assumeRootWithLoopDevices();
    root = scratch.directory("root");
    outside = scratch.directory("outside");
  }

  @AfterEach
  void detectedAgain() {
    ConfinedMounts.force(null);
  }

  @ParameterizedTest
  @EnumSource(ConfinedMounts.Mode.class)
  void bindsOntoTheResolvedTargetAndUnmountsOnlyThatMount(ConfinedMounts.Mode mode) throws IOException {
    ConfinedMounts.force(mode);
    Path source = scratch.directory("root/staging");
    Files.writeString(source.resolve("data"), "hello");
    Path target = root.resolve("alloc/a/target");

    assertThat(ConfinedMounts.makeDirectories(root, target)).isTrue();
    assertThat(ConfinedMounts.makeDirectories(root, target)).isFalse();
    int id = ConfinedMounts.bind(root, source, root, target, false);
    assertThat(ConfinedMounts.bind(root, source, root, target, false)).as("idempotent").isEqualTo(id);
    assertThat(ConfinedMounts.mountId(root, target)).hasValue(id);
    assertThat(MountTable.at(target).orElseThrow().id()).isEqualTo(id);
    assertThat(Files.readString(target.resolve("data"))).isEqualTo("hello");

    assertThatThrownBy(() -> ConfinedMounts.unmount(root, target, OptionalInt.of(id + 100_000)))
        .isInstanceOf(MountConflictException.class);
    assertThat(MountTable.isMountPoint(target)).as("another id: left mounted").isTrue();
    assertThat(ConfinedMounts.unmount(root, target, OptionalInt.of(id))).isTrue();
    assertThat(ConfinedMounts.unmount(root, target, OptionalInt.of(id))).isFalse();
    assertThat(MountTable.isMountPoint(target)).isFalse();
    assertThat(ConfinedMounts.removeIfEmpty(root, target)).isTrue();
    assertThat(target).doesNotExist();
  }

  @ParameterizedTest
  @EnumSource(ConfinedMounts.Mode.class)
  void aReadOnlyBindIsReadOnlyFromTheStart(ConfinedMounts.Mode mode) throws IOException {
    ConfinedMounts.force(mode);
    Path source = scratch.directory("root/staging");
    Path target = root.resolve("target");
    ConfinedMounts.makeDirectories(root, target);
    int id = ConfinedMounts.bind(root, source, root, target, true);
    try {
      assertThat(MountTable.at(target).orElseThrow().readOnly()).isTrue();
      assertThatThrownBy(() -> Files.writeString(target.resolve("x"), "x"))
          .isInstanceOf(FileSystemException.class);
      assertThatThrownBy(() -> ConfinedMounts.bind(root, source, root, target, false))
          .as("read-write asked where read-only is").isInstanceOf(MountConflictException.class);
    } finally {
      ConfinedMounts.unmount(root, target, OptionalInt.of(id));
    }
  }

  @ParameterizedTest
  @EnumSource(ConfinedMounts.Mode.class)
  void aSymlinkOnTheWayIsRefusedAndNothingHappensWhereItPoints(ConfinedMounts.Mode mode) throws IOException {
    ConfinedMounts.force(mode);
    Path source = scratch.directory("root/staging");
    Files.createDirectories(outside.resolve("vol"));
    Files.createSymbolicLink(root.resolve("alloc"), outside);
    Path target = root.resolve("alloc/vol/target");
    Files.createSymbolicLink(root.resolve("link-target"), outside.resolve("vol"));

    assertThatThrownBy(() -> ConfinedMounts.makeDirectories(root, target)).isInstanceOf(PathEscapeException.class);
    assertThat(outside.resolve("vol/target")).doesNotExist();
    Files.createDirectories(outside.resolve("vol/target"));
    assertThatThrownBy(() -> ConfinedMounts.bind(root, source, root, target, false))
        .isInstanceOf(PathEscapeException.class);
    assertThatThrownBy(() -> ConfinedMounts.bind(root, source, root, root.resolve("link-target"), false))
        .as("the target itself a link").isInstanceOf(PathEscapeException.class);
    assertThatThrownBy(() -> ConfinedMounts.bind(root, root.resolve("alloc/vol"), root, source, false))
        .as("the source through a link").isInstanceOf(PathEscapeException.class);
    assertThatThrownBy(() -> ConfinedMounts.createFile(root, root.resolve("alloc/vol/file")))
        .isInstanceOf(PathEscapeException.class);
    assertThat(outside.resolve("vol/file")).doesNotExist();
    assertThat(MountTable.read()).noneMatch(m -> m.mountPoint().startsWith(outside));
    assertThat(ConfinedMounts.unmount(root, root.resolve("link-target"), OptionalInt.empty()))
        .as("a link is not a mount point").isFalse();
    assertThatThrownBy(() -> ConfinedMounts.removeIfEmpty(root, target)).isInstanceOf(PathEscapeException.class);
    assertThat(outside.resolve("vol/target")).exists();
  }

  @ParameterizedTest
  @EnumSource(ConfinedMounts.Mode.class)
  void mountsAFreshFilesystemWithItsFlagsAndData(ConfinedMounts.Mode mode) throws IOException {
    ConfinedMounts.force(mode);
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", 32 * MIB), false);
    try {
      Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of("-q"));
      Path target = root.resolve("staging/vol");
      ConfinedMounts.makeDirectories(root, target);
      Set<MountFlag> flags = Set.of(MountFlag.NO_ATIME, MountFlag.NO_EXEC);
      int id = ConfinedMounts.mount(loop.device(), root, target, "ext4", flags, "errors=remount-ro,commit=7");
      assertThat(ConfinedMounts.mount(loop.device(), root, target, "ext4", flags, "commit=7")).isEqualTo(id);
      MountEntry entry = MountTable.at(target).orElseThrow();
      assertThat(entry.id()).isEqualTo(id);
      assertThat(entry.fsType()).isEqualTo("ext4");
      assertThat(entry.mountOptions()).contains("noatime", "noexec");
      assertThat(entry.superOptions()).contains("commit=7");
      Files.writeString(target.resolve("hello"), "world");
      assertThatThrownBy(() -> ConfinedMounts.mount(loop.device(), root, target, "ext4",
          Set.of(MountFlag.READ_ONLY), null)).isInstanceOf(MountConflictException.class);
      assertThat(ConfinedMounts.unmount(root, target, OptionalInt.of(id))).isTrue();
      assertThat(target.resolve("hello")).doesNotExist();

      int ro = ConfinedMounts.mount(loop.device(), root, target, "ext4", Set.of(MountFlag.READ_ONLY), null);
      assertThat(MountTable.at(target).orElseThrow().readOnly()).isTrue();
      assertThatThrownBy(() -> Files.writeString(target.resolve("x"), "x")).isInstanceOf(IOException.class)
          .isNotInstanceOf(AccessDeniedException.class);
      assertThat(ConfinedMounts.unmount(root, target, OptionalInt.of(ro))).isTrue();
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @ParameterizedTest
  @EnumSource(ConfinedMounts.Mode.class)
  void bindsADeviceOntoAFileItCreates(ConfinedMounts.Mode mode) throws IOException {
    ConfinedMounts.force(mode);
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", 4 * MIB), false);
    try {
      Path target = root.resolve("alloc/block");
      assertThat(ConfinedMounts.createFile(root, target)).isTrue();
      assertThat(ConfinedMounts.createFile(root, target)).isFalse();
      int id = ConfinedMounts.bindDevice(loop.device(), root, target, false);
      assertThat(MountTable.at(target).orElseThrow().id()).isEqualTo(id);
      assertThat(ConfinedMounts.removeIfEmpty(root, target)).as("a mount point stays").isFalse();
      assertThat(ConfinedMounts.unmount(root, target, OptionalInt.of(id))).isTrue();
      assertThat(ConfinedMounts.removeIfEmpty(root, target)).isTrue();
    } finally {
      LoopDevices.detach(loop);
    }
  }
}
