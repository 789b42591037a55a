package dev.caravan.csi.observe.inspect;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * The inspector's reads of the storage (the backend's evidence about a volume, the volume's health),
 * each waited for until a deadline. A pool whose I/O is suspended, a disk that stopped answering or
 * an appliance that is late can hold such a read in the kernel or on the network for as long as the
 * fault lasts, and that is exactly when an operator inspects: the inspection answers anyway, saying
 * the storage did not. One read per key (volume and kind) runs at a time, on a platform thread (a
 * read blocked in native code would pin a virtual thread's carrier); an inspection that comes while it
 * runs waits for that same read, so a read stuck for good holds one thread, not one per inspection.
 */
final class StorageReads {
  /** How long an inspection waits for the storage: the CLI waits 30 s for the whole chain, Nomad's API included. */
  static final Duration BOUND = Duration.ofSeconds(4);

  private static final Executor THREADS =
      Executors.newThreadPerTaskExecutor(Thread.ofPlatform().name("caravan-inspect-read-", 0).daemon(true).factory());

  private final Map<String, CompletableFuture<?>> running = new ConcurrentHashMap<>();

  /** What a read gave by its deadline: a value, the exception it threw, or neither (still running). */
  record Answer<T>(Optional<T> value, Optional<RuntimeException> error) {
    boolean late() {
      return value.isEmpty() && error.isEmpty();
    }
  }

  /** Starts {@code read}, or joins the one with the same key that is still running. */
  @SuppressWarnings("unchecked") // one key, one kind of read: the caller's
  <T> CompletableFuture<T> start(String key, Supplier<T> read) {
    CompletableFuture<T> current = (CompletableFuture<T>) running.compute(key,
        (k, f) -> f != null && !f.isDone() ? f : CompletableFuture.supplyAsync(read, THREADS));
    // Attached outside compute: a read already done runs this at once, and the map forbids that inside.
    // The caller gets the dependent future, which completes as the read does, with its value or failure.
    return current.whenComplete((v, e) -> running.remove(key, current));
  }

  /** The read's answer, waiting for it until {@code deadlineNanos} ({@link System#nanoTime}). */
  static <T> Answer<T> await(CompletableFuture<T> read, long deadlineNanos) {
    try {
      long left = Math.max(0, deadlineNanos - System.nanoTime());
      return new Answer<>(Optional.ofNullable(read.get(left, TimeUnit.NANOSECONDS)), Optional.empty());
    } catch (TimeoutException e) {
      return new Answer<>(Optional.empty(), Optional.empty());
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException r) {
        return new Answer<>(Optional.empty(), Optional.of(r));
      }
      throw new IllegalStateException("a storage read failed: " + e.getCause(), e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return new Answer<>(Optional.empty(), Optional.empty());
    }
  }
}
