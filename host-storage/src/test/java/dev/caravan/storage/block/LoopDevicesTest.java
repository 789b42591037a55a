package dev.caravan.storage.block;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.file.SparseFiles;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.internal.sys.LoopIoctls;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class LoopDevicesTest {
  private static final long MIB = 1 << 20;

  @RegisterExtension final Scratch scratch = new Scratch();

  @BeforeEach
  void requireLoopDevices() {
    HostRequirements.assumeRootWithLoopDevices();
  }

  @Test
  void attachesReadWriteAndDetaches() {
    Path image = scratch.image("disk.img", 16 * MIB);

    LoopDevice loop = LoopDevices.attach(image, false);
    try {
      assertThat(loop.device()).isEqualTo(Path.of("/dev/loop" + loop.number()));
      assertThat(loop.backingFile()).isEqualTo(image);
      assertThat(loop.readOnly()).isFalse();
      assertThat(BlockDevices.size(loop.device())).isEqualTo(16 * MIB);
      assertThat(LoopDevices.list()).contains(loop);
    } finally {
      LoopDevices.detach(loop);
    }

    assertThat(LoopDevices.find(image)).isEmpty();
    assertThat(LoopDevices.list()).doesNotContain(loop);
  }

  @Test
  void attachesReadOnly() throws Exception {
    Path image = scratch.image("disk.img", 4 * MIB);

    LoopDevice loop = LoopDevices.attach(image, true);
    try {
      assertThat(loop.readOnly()).isTrue();
      assertThat(LoopDevices.find(image)).contains(loop);
      assertThat(Files.readString(Path.of("/sys/block/loop" + loop.number() + "/ro")).strip())
          .isEqualTo("1");
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void attachingAnAttachedFileReturnsItsDevice() {
    Path image = scratch.image("disk.img", 4 * MIB);

    LoopDevice first = LoopDevices.attach(image, false);
    try {
      assertThat(LoopDevices.attach(image, false)).isEqualTo(first);
      assertThat(LoopDevices.attach(scratch.dir().resolve("./disk.img"), false)).isEqualTo(first);
      assertThatThrownBy(() -> LoopDevices.attach(image, true))
          .isInstanceOf(StorageException.class)
          .hasMessageContaining("already attached read-write as " + first.device());
    } finally {
      LoopDevices.detach(first);
    }
  }

  /**
   * Listing reads every loop device's sysfs attributes while other processes (other plugins, other
   * test runs on the host) attach and detach theirs: a device detached mid-read is simply not bound.
   */
  @Test
  void listingWhileDevicesDetachNeverFails() throws Exception {
    Path image = scratch.image("churn.img", 4 * MIB);
    long until = System.nanoTime() + 3_000_000_000L;
    try (ExecutorService pool = Executors.newFixedThreadPool(2)) {
      Future<Integer> churn = pool.submit(() -> {
        int cycles = 0;
        while (System.nanoTime() < until) {
          LoopDevices.detach(LoopDevices.attach(image, false));
          cycles++;
        }
        return cycles;
      });
      Future<Integer> lists = pool.submit(() -> {
        int n = 0;
        while (System.nanoTime() < until) {
          LoopDevices.list();
          n++;
        }
        return n;
      });
      assertThat(churn.get()).isPositive();
      assertThat(lists.get()).isPositive();
    }
  }

  @Test
  void threadsAttachingOneFileShareItsDevice() throws Exception {
    Path image = scratch.image("disk.img", 4 * MIB);
    List<Future<LoopDevice>> attaches = new ArrayList<>();
    try (ExecutorService pool = Executors.newFixedThreadPool(8)) {
      for (int i = 0; i < 8; i++) {
        attaches.add(pool.submit(() -> LoopDevices.attach(image, false)));
      }
    }
    LoopDevice loop = attaches.get(0).get();
    try {
      for (Future<LoopDevice> attach : attaches) {
        assertThat(attach.get()).isEqualTo(loop);
      }
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void findsByInodeNotByName() throws Exception {
    Path image = scratch.image("disk.img", 4 * MIB);
    Path link = Files.createLink(scratch.dir().resolve("hard-link.img"), image);
    Path other = scratch.image("other.img", 4 * MIB);

    LoopDevice loop = LoopDevices.attach(image, false);
    try {
      assertThat(LoopDevices.find(link)).contains(loop);
      assertThat(LoopDevices.find(other)).isEmpty();
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void refreshCapacitySeesTheGrownFile() {
    Path image = scratch.image("disk.img", 8 * MIB);

    LoopDevice loop = LoopDevices.attach(image, false);
    try {
      SparseFiles.grow(image, 24 * MIB);
      assertThat(BlockDevices.size(loop.device())).isEqualTo(8 * MIB);

      LoopDevices.refreshCapacity(loop);

      assertThat(BlockDevices.size(loop.device())).isEqualTo(24 * MIB);
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void refreshCapacityOfAKnownDeviceSeesTheGrownFileAndLeavesACurrentOneAlone() {
    Path image = scratch.image("disk.img", 8 * MIB);

    LoopDevice loop = LoopDevices.attach(image, false);
    try {
      LoopDevices.refreshCapacity(loop.device(), image); // current: nothing to change
      assertThat(BlockDevices.size(loop.device())).isEqualTo(8 * MIB);

      SparseFiles.grow(image, 24 * MIB);
      LoopDevices.refreshCapacity(loop.device(), image);

      assertThat(BlockDevices.size(loop.device())).isEqualTo(24 * MIB);
    } finally {
      LoopDevices.detach(loop);
    }
  }

  @Test
  void detachingTwiceIsFine() {
    LoopDevice loop = LoopDevices.attach(scratch.image("disk.img", 4 * MIB), false);

    LoopDevices.detach(loop);
    LoopDevices.detach(loop);

    assertThat(LoopDevices.list()).doesNotContain(loop);
  }

  @Test
  void aDeletedBackingFileStillDetaches() throws Exception {
    Path image = scratch.image("disk.img", 4 * MIB);
    LoopDevice loop = LoopDevices.attach(image, false);
    Files.delete(image);

    assertThat(LoopDevices.list())
        .anyMatch(
            l -> l.number() == loop.number() && l.backingFile().toString().endsWith(" (deleted)"));

    LoopDevices.detach(loop);
  }

  @Test
  void backsChecksOnlyTheGivenDevice() throws Exception {
    Path image = scratch.image("disk.img", 4 * MIB);
    Path other = scratch.image("other.img", 4 * MIB);

    LoopDevice loop = LoopDevices.attach(image, false);
    LoopDevice otherLoop = LoopDevices.attach(other, true);
    try {
      assertThat(LoopDevices.backs(loop.device(), image)).isTrue();
      assertThat(LoopDevices.backs(loop.device(), scratch.dir().resolve("./disk.img"))).isTrue();
      assertThat(LoopDevices.backs(otherLoop.device(), other)).isTrue();
      assertThat(LoopDevices.backs(loop.device(), other)).isFalse();
      assertThat(LoopDevices.backs(otherLoop.device(), image)).isFalse();
      assertThat(LoopDevices.backs(loop.device(), scratch.dir().resolve("missing.img"))).isFalse();
      assertThat(LoopDevices.backs(Path.of("/dev/null"), image)).isFalse();
    } finally {
      LoopDevices.detach(loop);
      LoopDevices.detach(otherLoop);
    }

    assertThat(LoopDevices.backs(loop.device(), image)).isFalse(); // unbound now (or reused elsewhere)
  }

  @Test
  void detachIfBackingDetachesOnlyTheGivenDeviceAndOnlyForItsFile() throws Exception {
    Path image = scratch.image("disk.img", 4 * MIB);
    Path other = scratch.image("other.img", 4 * MIB);
    LoopDevice loop = LoopDevices.attach(image, false);
    LoopDevice otherLoop = LoopDevices.attach(other, false);
    try {
      assertThat(LoopDevices.detachIfBacking(loop.device(), other)).as("another file's device").isFalse();
      assertThat(LoopDevices.detachIfBacking(Path.of("/dev/null"), image)).as("not a loop device").isFalse();
      assertThat(LoopDevices.find(image)).contains(loop);
      assertThat(LoopDevices.find(other)).contains(otherLoop);

      assertThat(LoopDevices.detachIfBacking(loop.device(), image)).isTrue();
      assertThat(LoopDevices.find(image)).isEmpty();
      assertThat(LoopDevices.find(other)).as("the other device is left alone").contains(otherLoop);
      assertThat(LoopDevices.detachIfBacking(loop.device(), image)).as("a second time: unbound").isFalse();
    } finally {
      LoopDevices.detach(loop);
      LoopDevices.detach(otherLoop);
    }
  }

  @Test
  void backsMatchesByInodeNotByName() throws Exception {
    Path image = scratch.image("disk.img", 4 * MIB);
    LoopDevice loop = LoopDevices.attach(image, false);
    Path moved = scratch.dir().resolve("moved.img");
    try {
      Files.move(image, moved);
      SparseFiles.create(image, 4 * MIB); // a different file under the old name

      assertThat(LoopDevices.backs(loop.device(), image)).isFalse();
      assertThat(LoopDevices.backs(loop.device(), moved)).isTrue();
    } finally {
      // sysfs now names the moved file, which is what detach compares with
      LoopDevices.find(Files.exists(moved) ? moved : image).ifPresent(LoopDevices::detach);
    }
  }

  @Test
  void findAndListStepOverUnboundDevices() {
    Path image = scratch.image("disk.img", 4 * MIB);
    int free;
    try (Fd control = Libc.open(Path.of("/dev/loop-control"), LinuxUapi.O_RDWR())) {
      free = LoopIoctls.getFree(control); // an unbound device, created if there was none
    }
    LoopDevice loop = LoopDevices.attach(image, false);
    try {
      assertThat(LoopDevices.find(image)).contains(loop);
      assertThat(LoopDevices.list()).contains(loop);
    } finally {
      LoopDevices.detach(loop);
    }
    assertThat(LoopDevices.find(image)).isEmpty();
    assertThat(LoopDevices.backs(Path.of("/dev/loop" + free), image)).isFalse();
  }
}
