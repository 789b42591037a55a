package dev.caravan.csi.server;

import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Runs one call's tasks on a shared pool one at a time, in the order they were given: the guarantee
 * gRPC gives a call's listener. A burst of tasks costs one pool thread's wake-up, not one each.
 */
final class SerialExecutor implements Executor {
  private final Executor pool;
  private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
  private final AtomicBoolean scheduled = new AtomicBoolean();

  SerialExecutor(Executor pool) {
    this.pool = pool;
  }

  @Override
  public void execute(Runnable task) {
    tasks.add(task);
    schedule();
  }

  private void schedule() {
    if (scheduled.compareAndSet(false, true)) {
      try {
        pool.execute(this::drain);
      } catch (RuntimeException rejected) {
        scheduled.set(false);
        throw rejected;
      }
    }
  }

  private void drain() {
    try {
      Runnable task;
      while ((task = tasks.poll()) != null) {
        task.run();
      }
    } finally {
      scheduled.set(false);
      // A task added after the last poll but before the flag was cleared found it set and left it to us.
      if (!tasks.isEmpty()) {
        schedule();
      }
    }
  }
}
