package dev.caravan.csi.peer;

import dev.caravan.csi.backend.CsiException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/** A home's locks, one per volume name (striped: a few names share one), under which it decides. */
final class NameLocks {
  private final ReentrantLock[] locks = new ReentrantLock[64];
  private final Duration wait;

  NameLocks(Duration wait) {
    this.wait = wait;
    for (int i = 0; i < locks.length; i++) {
      locks[i] = new ReentrantLock();
    }
  }

  /** The name's lock, held when it returns; ABORTED when another create of the name holds it too long. */
  ReentrantLock lock(String name, String self) {
    ReentrantLock lock = locks[Math.floorMod(name.hashCode(), locks.length)];
    try {
      if (!lock.tryLock(wait.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new CsiException(CsiException.Kind.ABORTED, "another CreateVolume of the name " + name + " is being"
            + " placed (node " + self + " is its home); retry");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CsiException(CsiException.Kind.ABORTED, "interrupted while waiting to place " + name);
    }
    return lock;
  }
}
