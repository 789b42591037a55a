package dev.caravan.storage.mount;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.storage.testing.Scratch;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Mounts' per-target lock: an operation that waits at one target (an unmount whose device queues I/O
 * while its iSCSI target is stalled waits in the kernel, lock held) holds up only that target. No root
 * needed: nothing is mounted, so each unmount only looks and answers false.
 */
class MountsLockTest {
  @RegisterExtension final Scratch scratch = new Scratch();

  @Test
  void aTargetWhoseLockIsHeldDelaysOnlyItself() throws Exception {
    Path stuck = scratch.directory("stuck");
    CompletableFuture<Boolean> behind;
    try (Mounts.Held held = Mounts.lock(stuck)) {
      for (int i = 0; i < 200; i++) { // more targets than the 64 lock stripes there were
        Path other = scratch.directory("other-" + i);
        assertThat(CompletableFuture.supplyAsync(() -> Mounts.unmount(other)).get(5, TimeUnit.SECONDS))
            .as("unmount at %s while %s is locked", other, stuck).isFalse();
      }
      behind = CompletableFuture.supplyAsync(() -> Mounts.unmount(stuck));
      Thread.sleep(200);
      assertThat(behind).as("an unmount at the locked target waits for it").isNotDone();
    }
    assertThat(behind.get(5, TimeUnit.SECONDS)).isFalse();
    assertThat(Mounts.lockedTargets()).as("no lock is kept once nothing runs").isZero();
  }
}
