package dev.caravan.storage;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FormatOutcome;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.mount.MountFlag;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Many volumes going through their whole life at once, as on a busy node. */
class ParallelCyclesTest {
  private static final int CYCLES = 20;
  private static final long MIB = 1 << 20;

  @RegisterExtension final Scratch scratch = new Scratch();

  @Test
  void twentyParallelAttachFormatMountUnmountDetachCycles() throws Exception {
    HostRequirements.assumeRootWithLoopDevices();
    CountDownLatch start = new CountDownLatch(1);
    List<Future<LoopDevice>> cycles = new ArrayList<>();
    ExecutorService pool = Executors.newFixedThreadPool(CYCLES);
    try {
      for (int i = 0; i < CYCLES; i++) {
        int n = i;
        cycles.add(
            pool.submit(
                (Callable<LoopDevice>)
                    () -> {
                      start.await();
                      return cycle(n);
                    }));
      }
      start.countDown();
      List<Integer> numbers = new ArrayList<>();
      for (Future<LoopDevice> cycle : cycles) {
        numbers.add(cycle.get(5, TimeUnit.MINUTES).number());
      }
      assertThat(numbers).hasSize(CYCLES);
    } finally {
      pool.shutdownNow();
    }
    // The Scratch extension then asserts that no loop device and no mount was left behind.
  }

  /** One volume's life; returns the device it used (every cycle had its own while attached). */
  private LoopDevice cycle(int n) throws Exception {
    Path image = scratch.image("volume-" + n + ".img", 32 * MIB);
    Path mnt = scratch.directory("mnt-" + n);
    LoopDevice loop = LoopDevices.attach(image, false);
    try {
      assertThat(loop.backingFile()).isEqualTo(image);
      assertThat(Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of("-q")))
          .isEqualTo(FormatOutcome.FORMATTED);
      Mounts.mount(loop.device(), mnt, "ext4", Set.of(), null);
      try {
        Files.writeString(mnt.resolve("id"), "volume " + n);
        assertThat(MountTable.at(mnt).orElseThrow().source()).isEqualTo(loop.device().toString());
      } finally {
        assertThat(Mounts.unmount(mnt)).isTrue();
      }
      Mounts.mount(loop.device(), mnt, "ext4", Set.of(MountFlag.READ_ONLY), null);
      assertThat(mnt.resolve("id")).hasContent("volume " + n);
      assertThat(Mounts.unmount(mnt)).isTrue();
    } finally {
      LoopDevices.detach(loop);
    }
    return loop;
  }
}
