package dev.caravan.csi.backend;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * A backend's readiness check that may block (an appliance that does not answer, a ZFS ioctl on a
 * pool whose I/O is suspended), answered within {@link #PROBE_BOUND}. One check runs at a time, on a
 * platform thread of its own (a check blocked in native code would pin a virtual thread's carrier),
 * and every Probe that comes while it runs waits for that same answer: a check stuck in the kernel
 * for good holds one thread, not one per Probe, and Probe still answers (not ready, saying why)
 * before Nomad's 5 s per Probe run out.
 */
public final class BoundedReadiness {
  /** Under Nomad's 5 s per Probe, so that a slow check is an answer (not ready), not a timeout. */
  public static final Duration PROBE_BOUND = Duration.ofSeconds(4);

  private static final Executor CHECKS =
      Executors.newThreadPerTaskExecutor(Thread.ofPlatform().name("caravan-readiness-", 0).daemon(true).factory());

  private final String subject;
  private final Supplier<Readiness> check;
  private final Duration bound;
  private CompletableFuture<Readiness> running;

  /**
   * @param subject what the check asks, as the not-ready answer names it ("the QNAP appliance")
   * @param check the check itself; it may block
   */
  public BoundedReadiness(String subject, Supplier<Readiness> check) {
    this(subject, check, PROBE_BOUND);
  }

  BoundedReadiness(String subject, Supplier<Readiness> check, Duration bound) {
    this.subject = Objects.requireNonNull(subject, "subject");
    this.check = Objects.requireNonNull(check, "check");
    this.bound = Objects.requireNonNull(bound, "bound");
  }

  /** The check's answer, or not ready when it has not answered within the bound. */
  public Readiness get() {
    CompletableFuture<Readiness> answer = current();
    try {
      return answer.get(bound.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      return Readiness.notReady(subject + " did not answer within " + bound.toSeconds()
          + " s (Nomad gives a Probe 5 s)");
    } catch (ExecutionException e) {
      return Readiness.notReady(subject + ": " + e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Readiness.notReady("interrupted");
    }
  }

  private synchronized CompletableFuture<Readiness> current() {
    if (running == null || running.isDone()) {
      running = CompletableFuture.supplyAsync(check, CHECKS);
    }
    return running;
  }
}
