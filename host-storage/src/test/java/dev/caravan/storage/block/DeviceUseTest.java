package dev.caravan.storage.block;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * DeviceUse against real loop devices: bind mounts of their device nodes (how a volume is published
 * for block access), a filesystem mount, an exclusive open; and its mountinfo matching on text.
 */
class DeviceUseTest {
  private static final long MIB = 1 << 20;

  @RegisterExtension final Scratch scratch = new Scratch();
  private LoopDevice attached;

  private LoopDevice loop() {
    HostRequirements.assumeRootWithLoopDevices();
    attached = LoopDevices.attach(scratch.image("disk.img", 16 * MIB), false);
    return attached;
  }

  @AfterEach
  void undo() {
    // deepest first: a bind of a bind before the bind it copies
    MountTable.read().stream()
        .map(MountEntry::mountPoint)
        .filter(p -> p.startsWith(scratch.dir()))
        .sorted(Comparator.reverseOrder())
        .forEach(Mounts::unmount);
    if (attached != null) {
      LoopDevices.detach(attached);
    }
  }

  private Path bindAt(LoopDevice loop, String name) throws IOException {
    Path target = Files.createFile(scratch.dir().resolve(name));
    Mounts.bind(loop.device(), target, false);
    return target;
  }

  @Test
  void aLoopDeviceNothingUsesIsNotInUse() {
    LoopDevice loop = loop();

    DeviceUse use = DeviceUse.of(loop.device());

    assertThat(use.inUse()).isFalse();
    assertThat(use.users()).isEmpty();
  }

  @Test
  void aBindOfTheDeviceNodeIsUseThatTheMountsDeviceNumberDoesNotShow() throws IOException {
    LoopDevice loop = loop();
    Path target = bindAt(loop, "published");

    // The mount's major:minor is devtmpfs's, not the loop device's: matching by it sees nothing.
    String dev = BlockDevices.majorMinor(loop.device());
    MountEntry bind = MountTable.at(target).orElseThrow();
    assertThat(bind.majorMinor()).isNotEqualTo(dev);
    assertThat(bind.root()).isEqualTo("/loop" + loop.number());

    assertThat(DeviceUse.of(loop.device()).users()).containsExactly("bound at " + target);
  }

  @Test
  void everyBindIsNamedAndABindOfABindToo() throws IOException {
    LoopDevice loop = loop();
    Path first = bindAt(loop, "first");
    Path second = Files.createFile(scratch.dir().resolve("second"));
    Mounts.bind(first, second, true);

    assertThat(DeviceUse.of(loop.device()).users())
        .containsExactlyInAnyOrder("bound at " + first, "bound at " + second);
  }

  @Test
  void aPathThroughASymlinkAsksAboutTheDeviceItNames() throws IOException {
    LoopDevice loop = loop();
    Path target = bindAt(loop, "published");
    Path link = Files.createSymbolicLink(scratch.dir().resolve("link"), loop.device());

    assertThat(DeviceUse.of(link).users()).containsExactly("bound at " + target);
  }

  @Test
  void aMountedFilesystemIsUse() throws IOException {
    LoopDevice loop = loop();
    HostRequirements.assumeTool("mkfs.ext4", "e2fsprogs");
    Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of());
    Path mountPoint = scratch.directory("mnt");
    Mounts.mount(loop.device(), mountPoint, "ext4", Set.of(), "");

    assertThat(DeviceUse.of(loop.device()).users()).containsExactly("mounted at " + mountPoint);
  }

  @Test
  void aMountLeftInAnotherMountNamespaceIsUseNamedWithItsProcess() throws Exception {
    // What any process that unshares its mounts with private propagation does to a staged volume: it
    // copies the mount, and unmounting here no longer reaches the copy, which keeps the filesystem,
    // and so the device, busy. An operator needs to know which process, not that "something" does.
    LoopDevice loop = loop();
    HostRequirements.assumeTool("mkfs.ext4", "e2fsprogs");
    HostRequirements.assumeTool("unshare", "util-linux");
    Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of());
    Path mountPoint = scratch.directory("mnt");
    Mounts.mount(loop.device(), mountPoint, "ext4", Set.of(), "");
    Path ready = scratch.dir().resolve("copied");
    Process copy = new ProcessBuilder("unshare", "--mount", "--propagation", "private", "sh", "-c",
        "touch " + ready + " && exec sleep 60").redirectErrorStream(true).start();
    try {
      long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(20);
      while (!Files.exists(ready) && System.nanoTime() < deadline) {
        Thread.sleep(10);
      }
      assertThat(ready).as("the copy of the mount namespace is made").exists();
      Mounts.unmount(mountPoint);

      assertThat(DeviceUse.of(loop.device()).users())
          .containsExactly("mounted at " + mountPoint + " in the mount namespace of pid " + copy.pid() + " (sleep)");
    } finally {
      copy.destroyForcibly();
      copy.waitFor();
    }
    assertThat(DeviceUse.of(loop.device()).inUse()).as("once that namespace ends").isFalse();
  }

  @Test
  void anExclusiveOpenByAnotherOpenerIsUse() {
    LoopDevice loop = loop();
    Fd held = Libc.open(loop.device(), LinuxUapi.O_RDONLY() | LinuxUapi.O_EXCL());
    try {
      assertThat(DeviceUse.of(loop.device()).users()).containsExactly(DeviceUse.OPENED_EXCLUSIVELY);
    } finally {
      held.close();
    }
    assertThat(DeviceUse.of(loop.device()).inUse()).isFalse();
  }

  @Test
  void aNodeThatDoesNotExistIsUsedByNothingAndAFileIsRefused() throws IOException {
    assertThat(DeviceUse.of(scratch.dir().resolve("no-such-node")).inUse()).isFalse();
    Path file = Files.createFile(scratch.dir().resolve("file"));
    assertThatThrownBy(() -> DeviceUse.of(file))
        .isInstanceOf(StorageException.class)
        .hasMessage(file + " is not a block device");
  }

  // ---- the mountinfo matching, on text --------------------------------------------------------

  private static List<String> match(String mountinfo, Optional<String> nodeAtMountPoint) {
    return DeviceUse.mountsAndBinds(
        "zd16", "230:16", MountTable.parse(mountinfo), path -> nodeAtMountPoint);
  }

  @Test
  void onDevtmpfsTheNodesPathIsTheMatch() {
    String mountinfo = """
        41 22 0:5 /zd16 /csi/publish/vol rw - devtmpfs udev rw
        42 22 0:5 /zd160 /csi/publish/other rw - devtmpfs udev rw
        43 22 0:5 / /dev rw - devtmpfs udev rw
        44 22 230:16 / /mnt/stage rw - ext4 /dev/zd16 rw
        """;

    assertThat(match(mountinfo, Optional.empty()))
        .containsExactly("bound at /csi/publish/vol", "mounted at /mnt/stage");
  }

  @Test
  void elsewhereTheNodeAtTheMountPointMustBeTheDevice() {
    // A container's /dev on tmpfs: the node's name matches; its device number decides.
    String mountinfo = "41 22 0:77 /zd16 /alloc/dev-vol rw - tmpfs tmpfs rw\n";

    assertThat(match(mountinfo, Optional.of("230:16"))).containsExactly("bound at /alloc/dev-vol");
    assertThat(match(mountinfo, Optional.of("230:32"))).isEmpty();
    assertThat(match(mountinfo, Optional.empty())).isEmpty();
  }
}
