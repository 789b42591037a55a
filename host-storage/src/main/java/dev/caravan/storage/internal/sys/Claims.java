package dev.caravan.storage.internal.sys;

import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Supplier;

/**
 * Keeps exclusive claims on block devices ({@code O_EXCL} descriptors) out of starting children.
 *
 * <p>A child being started gets a copy of every descriptor of the JVM, and holds it until it
 * executes its program, when those opened close-on-exec are closed. A claim copied so outlives our
 * own close of it: a mkfs started right after our exclusive probe then finds the device busy. So in
 * this JVM an exclusive descriptor is opened, used and closed only while no process is being
 * started through host-storage, and the other way round. Processes started by other code in the JVM
 * are not held back.
 */
public final class Claims {
  private static final ReentrantReadWriteLock LOCK = new ReentrantReadWriteLock();

  private Claims() {}

  /** Runs {@code action}, which opens, uses and closes an exclusive descriptor. */
  public static <T> T whileClaiming(Supplier<T> action) {
    LOCK.readLock().lock();
    try {
      return action.get();
    } finally {
      LOCK.readLock().unlock();
    }
  }

  /** Runs {@code action}, which starts a process and returns once it runs its own program. */
  public static <T> T whileStarting(Supplier<T> action) {
    LOCK.writeLock().lock();
    try {
      return action.get();
    } finally {
      LOCK.writeLock().unlock();
    }
  }
}
