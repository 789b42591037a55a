package dev.caravan.csi.backend.file;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.file.SparseFiles;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.fs.Frozen;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.HostRequirements;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The records of freezes in progress: a freeze whose process still runs is left alone (another
 * process opening the same data directory must not thaw it); one whose process is gone is thawed.
 */
class FreezesTest {
  private static final String VOLUME = "vol-frozen-0123456789ab";

  private Path dir;
  private FileStore store;
  private LoopDevice loop;
  private Path mnt;

  @BeforeEach
  void mountedVolume() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    dir = Files.createTempDirectory("caravan-freezes-");
    store = new FileStore(dir);
    SparseFiles.create(store.volumeImage(VOLUME), 32L << 20);
    loop = LoopDevices.attach(store.volumeImage(VOLUME), false);
    Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of());
    mnt = Files.createDirectories(dir.resolve("mnt"));
    Mounts.mount(loop.device(), mnt, "ext4", Set.of(), "");
  }

  @AfterEach
  void clean() throws IOException {
    if (dir == null) {
      return;
    }
    if (MountTable.isMountPoint(mnt)) {
      Filesystems.thaw(mnt);
      Mounts.unmount(mnt);
    }
    LoopDevices.detach(loop);
    try (Stream<Path> paths = Files.walk(dir)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
  }

  @Test
  void aFreezeInProgressIsLeftAloneAndItsRecordGoesWithTheThaw() {
    Freezes freezes = new Freezes(store);
    List<String> seenByAnotherOpener = freezes.whileFrozen(VOLUME, mnt, () -> {
      assertThat(records()).as("records while frozen").containsExactly(VOLUME);
      return new Freezes(store).thawLeftovers();
    });
    assertThat(seenByAnotherOpener).isEmpty();
    assertThat(records()).as("records after the thaw").isEmpty();
    assertThat(Filesystems.thaw(mnt)).as("frozen after whileFrozen").isFalse();
  }

  @Test
  void aFreezeWhoseProcessIsGoneIsThawed() throws IOException {
    Frozen lost = Filesystems.freeze(mnt); // as a process that died holding it leaves it
    Files.createDirectories(store.freezing());
    Files.writeString(store.freezing().resolve(VOLUME), "mountPoint=" + mnt + "\npid=2147483647\n");
    assertThatThrownBy(() -> Filesystems.freeze(mnt)).as("frozen before").isInstanceOf(StorageException.class);

    assertThat(new Freezes(store).thawLeftovers()).singleElement().asString()
        .startsWith("thawed volume " + VOLUME);
    assertThat(Filesystems.thaw(mnt)).as("frozen after thawLeftovers").isFalse();
    assertThat(records()).isEmpty();
    assertThatThrownBy(lost::close).isInstanceOf(StorageException.class); // not frozen: EINVAL; its descriptor closes
  }

  private List<String> records() {
    if (!Files.isDirectory(store.freezing())) {
      return List.of();
    }
    try (Stream<Path> files = Files.list(store.freezing())) {
      return files.map(p -> p.getFileName().toString()).toList();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
