package dev.caravan.csi.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.exec.UnreapedTool;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Every operation on a volume runs alone: a second one while the first holds the lock is refused. */
class VolumeLocksTest {
  @Test
  void locksAreNonBlockingPerKey() {
    VolumeLocks locks = new VolumeLocks();
    try (VolumeLocks.Held a = locks.acquire(VolumeLocks.volume("v1"))) {
      assertThatThrownBy(() -> locks.acquire(VolumeLocks.volume("v1")))
          .isInstanceOfSatisfying(CsiException.class, e -> assertThat(e.kind()).isEqualTo(CsiException.Kind.ABORTED))
          .hasMessage("an operation for volume v1 is already pending");
      // all-or-nothing: a contended second key releases the first
      assertThatThrownBy(() -> locks.acquire(VolumeLocks.volume("v2"), VolumeLocks.volume("v1")));
      assertThat(locks.isHeld(VolumeLocks.volume("v2"))).isFalse();
      locks.acquire(VolumeLocks.volume("v3")).close();
    }
    assertThat(locks.isHeld(VolumeLocks.volume("v1"))).isFalse();
  }

  /**
   * A tool killed after its timeout under a volume's lock that has not exited (a real process here,
   * named as the tool runner names one) keeps the volume busy, naming the process, until it is gone.
   */
  @Test
  void aVolumeStaysBusyWhileAToolKilledUnderItsLockStillRuns() throws Exception {
    java.util.Deque<UnreapedTool> ranOnThisThread = new java.util.ArrayDeque<>();
    VolumeLocks locks = new VolumeLocks(() -> {
      List<UnreapedTool> taken = List.copyOf(ranOnThisThread);
      ranOnThisThread.clear();
      return taken;
    });
    Process tool = new ProcessBuilder("sleep", "600").start();
    try {
      try (VolumeLocks.Held held = locks.acquire(VolumeLocks.volume("v1"), VolumeLocks.volume("v2"))) {
        ranOnThisThread.add(new UnreapedTool(tool.pid(), List.of("sleep", "600"), tool.onExit()));
      }
      assertThatThrownBy(() -> locks.acquire(VolumeLocks.volume("v1")))
          .isInstanceOfSatisfying(CsiException.class, e -> assertThat(e.kind()).isEqualTo(CsiException.Kind.ABORTED))
          .hasMessageContaining("volume v1")
          .hasMessageContaining("process " + tool.pid() + " (sleep 600)");
      assertThat(locks.isHeld(VolumeLocks.volume("v2"))).isTrue();
      locks.acquire(VolumeLocks.volume("v3")).close();
    } finally {
      tool.destroyForcibly();
    }
    tool.onExit().get(30, java.util.concurrent.TimeUnit.SECONDS);
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (locks.isHeld(VolumeLocks.volume("v1")) && System.nanoTime() < deadline) {
      Thread.sleep(10);
    }
    locks.acquire(VolumeLocks.volume("v1"), VolumeLocks.volume("v2")).close();
  }
}
