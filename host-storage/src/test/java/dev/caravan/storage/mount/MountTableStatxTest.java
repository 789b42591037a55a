package dev.caravan.storage.mount;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.internal.sys.Statx;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link MountTable#at} and {@link MountTable#isMountPoint} answer from statx where the kernel has
 * the mount id: the same answers as from mountinfo alone, on real mounts.
 */
class MountTableStatxTest {
  @RegisterExtension final Scratch scratch = new Scratch();

  private Path mounted;

  @AfterEach
  void unmountAll() {
    if (mounted != null) {
      while (Mounts.unmount(mounted)) {
        // next one down
      }
    }
  }

  private static void assumeStatxMountId() {
    assumeTrue(Statx.supported(), "needs statx with STATX_MNT_ID and STATX_ATTR_MOUNT_ROOT (Linux 5.8)");
  }

  private static void assumeRoot() {
    HostRequirements.assumeRoot();
  }

  /** The statx answer, the mountinfo-only answer, and isMountPoint agree for {@code path}. */
  private static Optional<MountEntry> agreed(Path path) {
    Optional<MountEntry> viaStatx = MountTable.at(path);
    assertThat(viaStatx).as("at(%s) from statx and from mountinfo alone", path)
        .isEqualTo(MountTable.fromMountinfo(MountTable.read(), path));
    assertThat(MountTable.isMountPoint(path)).as("isMountPoint(%s)", path).isEqualTo(viaStatx.isPresent());
    return viaStatx;
  }

  @Test
  void theRootIsAMountRootWithTheIdMountinfoShows() {
    assumeStatxMountId();
    Statx root = Statx.of(Path.of("/")).orElseThrow();
    assertThat(root.mountRoot()).isTrue();
    assertThat(root.symlink()).isFalse();
    assertThat(agreed(Path.of("/")).orElseThrow().id()).isEqualTo(root.mountId());
  }

  @Test
  void plainDirectoriesMissingPathsAndSymlinksAreNotMountPoints() throws Exception {
    assumeStatxMountId();
    Path dir = scratch.directory("plain");
    assertThat(Statx.of(dir).orElseThrow().mountRoot()).isFalse();
    assertThat(agreed(dir)).isEmpty();
    assertThat(Statx.of(dir.resolve("missing"))).isEmpty();
    assertThat(agreed(dir.resolve("missing"))).isEmpty();
    Path link = Files.createSymbolicLink(scratch.dir().resolve("link-to-root"), Path.of("/"));
    assertThat(Statx.of(link).orElseThrow().symlink()).isTrue();
    assertThat(agreed(link)).as("a symlink to a mount point is not one").isEmpty();
  }

  @Test
  void tmpfsStackedBindsSubdirectoryBindsAndSymlinkedParents() throws Exception {
    assumeStatxMountId();
    assumeRoot();
    mounted = scratch.directory("mnt");
    Mounts.mount(Path.of("tmpfs"), mounted, "tmpfs", Set.of(), "size=1m");
    MountEntry tmpfs = agreed(mounted).orElseThrow();
    assertThat(tmpfs.fsType()).isEqualTo("tmpfs");
    assertThat(Statx.of(mounted).orElseThrow().mountId()).isEqualTo(tmpfs.id());

    Path inside = Files.createDirectory(mounted.resolve("sub"));
    assertThat(agreed(inside)).as("a directory inside a mount").isEmpty();

    // a bind of a subdirectory: its mount root is not "/" of the filesystem
    Path sub = scratch.directory("sub-bind");
    Mounts.bind(inside, sub, false);
    try {
      MountEntry bind = agreed(sub).orElseThrow();
      assertThat(bind.root()).isEqualTo("/sub");
      // reached through a symlinked parent: parents are followed, as mount(2) and umount2(2) do
      Path viaLink = Files.createSymbolicLink(scratch.dir().resolve("parent-link"), scratch.dir());
      assertThat(agreed(viaLink.resolve("sub-bind"))).contains(bind);
      assertThat(Mounts.unmount(viaLink.resolve("sub-bind"))).isTrue();
      assertThat(agreed(sub)).isEmpty();
    } finally {
      Mounts.unmount(sub);
    }

    // a second mount stacked on the first: the topmost is the answer, then the one below it
    // (through mount(2) itself: Mounts.mount would take the same source at the same place for a repeat)
    Libc.mount("tmpfs", mounted, "tmpfs", 0, "size=2m");
    MountEntry top = agreed(mounted).orElseThrow();
    assertThat(top.id()).isNotEqualTo(tmpfs.id());
    assertThat(top.parentId()).isEqualTo(tmpfs.id());
    assertThat(Mounts.unmount(mounted)).isTrue();
    assertThat(agreed(mounted)).contains(tmpfs);
    assertThat(Mounts.unmount(mounted)).isTrue();
    assertThat(agreed(mounted)).isEmpty();
    assertThat(Mounts.unmount(mounted)).isFalse();
  }

  @Test
  void containingNamesTheMountAPathLiesOnThroughSymlinksAndStackedMounts() throws Exception {
    assumeRoot();
    Path plain = scratch.directory("plain-dir");
    MountEntry outer = MountTable.containing(plain);
    assertThat(outer.fsType()).as("the scratch directory's own filesystem").isNotEqualTo("tmpfs");
    assertThat(plain.toRealPath().startsWith(outer.mountPoint())).isTrue();

    mounted = scratch.directory("run");
    Mounts.mount(Path.of("tmpfs"), mounted, "tmpfs", Set.of(), "size=1m");
    Path deep = Files.createDirectories(mounted.resolve("caravan/abc"));
    MountEntry tmpfs = MountTable.containing(deep);
    assertThat(tmpfs.fsType()).isEqualTo("tmpfs");
    assertThat(tmpfs.mountPoint()).isEqualTo(mounted.toRealPath());
    Path link = Files.createSymbolicLink(scratch.dir().resolve("to-deep"), deep);
    assertThat(MountTable.containing(link)).as("followed, as path lookup does").isEqualTo(tmpfs);
    assertThat(MountTable.containing(mounted)).as("a mount point lies on its own mount").isEqualTo(tmpfs);

    Libc.mount("tmpfs", mounted, "tmpfs", 0, "size=2m");
    MountEntry top = MountTable.containing(mounted);
    assertThat(top.id()).as("the topmost of two stacked mounts").isNotEqualTo(tmpfs.id());
    assertThat(Mounts.unmount(mounted)).isTrue();
    assertThat(MountTable.containing(mounted)).isEqualTo(tmpfs);
    assertThat(Mounts.unmount(mounted)).isTrue();
    assertThat(MountTable.containing(mounted)).isEqualTo(outer);
  }
}
