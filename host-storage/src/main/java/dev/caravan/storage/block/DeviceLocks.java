package dev.caravan.storage.block;

import dev.caravan.storage.StorageException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * One lock per block device in this JVM, keyed by the device number ({@code "major:minor"}) rather
 * than by a path, so that {@code /dev/loop3} and a symlink to it are one device. A lock is dropped
 * once nobody holds or waits for it.
 */
final class DeviceLocks {
  private static final class Entry {
    final ReentrantLock lock = new ReentrantLock();
    int users; // guarded by LOCKS
  }

  private static final Map<String, Entry> LOCKS = new HashMap<>();

  private DeviceLocks() {}

  /**
   * Runs {@code action} holding the lock of device {@code majorMinor}, waiting for it if needed.
   */
  static <T> T holding(String majorMinor, Supplier<T> action) {
    Entry entry;
    synchronized (LOCKS) {
      entry = LOCKS.computeIfAbsent(majorMinor, key -> new Entry());
      entry.users++;
    }
    try {
      entry.lock.lockInterruptibly();
      try {
        return action.get();
      } finally {
        entry.lock.unlock();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StorageException("interrupted waiting for device " + majorMinor, e);
    } finally {
      synchronized (LOCKS) {
        if (--entry.users == 0) {
          LOCKS.remove(majorMinor);
        }
      }
    }
  }

  /** How many devices have a lock right now: for tests, which expect none to be left behind. */
  static int held() {
    synchronized (LOCKS) {
      return LOCKS.size();
    }
  }
}
