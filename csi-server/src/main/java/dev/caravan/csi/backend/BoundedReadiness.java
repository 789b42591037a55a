package dev.caravan.csi.backend;

import dev.caravan.csi.support.Failures;
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
 * and every Probe that comes while it runs waits for that same answer, never past the bound counted
 * from the check's start: a check stuck in the kernel for good holds one thread, not one per Probe,
 * and once it is over the bound each Probe answers at once, not ready, naming what the check waits
 * for and the last answer it gave, well before Nomad's 5 s per Probe run out.
 */
public final class BoundedReadiness {
  /** Under Nomad's 5 s per Probe, so that a slow check is an answer (not ready), not a timeout. */
  public static final Duration PROBE_BOUND = Duration.ofSeconds(4);

  private static final Executor CHECKS =
      Executors.newThreadPerTaskExecutor(Thread.ofPlatform().name("caravan-readiness-", 0).daemon(true).factory());

  private final Supplier<String> subject;
  private final Supplier<Readiness> check;
  private final Duration bound;
  private Check running;
  private Answer last;

  /** A check under way: its answer to come, and when it started. */
  private record Check(CompletableFuture<Readiness> answer, long startedNanos) {}

  /** The last answer a check gave, and when. */
  private record Answer(Readiness readiness, long atNanos) {}

  /**
   * @param subject what the check asks, as the not-ready answer names it ("the QNAP appliance")
   * @param check the check itself; it may block
   */
  public BoundedReadiness(String subject, Supplier<Readiness> check) {
    this(() -> subject, check, PROBE_BOUND);
  }

  /**
   * @param subject what a running check waits for at the moment, as the not-ready answer names it
   *     ("the status of ZFS pool tank"); asked only once the check is over the bound
   * @param check the check itself; it may block
   */
  public BoundedReadiness(Supplier<String> subject, Supplier<Readiness> check) {
    this(subject, check, PROBE_BOUND);
  }

  BoundedReadiness(String subject, Supplier<Readiness> check, Duration bound) {
    this(() -> subject, check, bound);
  }

  BoundedReadiness(Supplier<String> subject, Supplier<Readiness> check, Duration bound) {
    this.subject = Objects.requireNonNull(subject, "subject");
    this.check = Objects.requireNonNull(check, "check");
    this.bound = Objects.requireNonNull(bound, "bound");
  }

  /** The check's answer, or not ready when it has not answered within the bound of its start. */
  public Readiness get() {
    Check c = current();
    long left = bound.toNanos() - (System.nanoTime() - c.startedNanos());
    if (left <= 0 && !c.answer().isDone()) {
      return late(c);
    }
    try {
      return c.answer().get(Math.max(left, 0), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      return late(c);
    } catch (ExecutionException e) {
      return Readiness.notReady(subject.get() + ": " + Failures.describe(e.getCause()));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return Readiness.notReady("interrupted");
    }
  }

  private synchronized Check current() {
    if (running == null || running.answer().isDone()) {
      CompletableFuture<Readiness> answer = CompletableFuture.supplyAsync(this::checkOnce, CHECKS);
      running = new Check(answer, System.nanoTime());
    }
    return running;
  }

  /** The check's answer, a failure turned into not ready naming the subject; remembered as the last. */
  private Readiness checkOnce() {
    Readiness answer;
    try {
      answer = check.get();
    } catch (RuntimeException e) {
      answer = Readiness.notReady(subject.get() + ": " + Failures.describe(e));
    }
    synchronized (this) {
      last = new Answer(answer, System.nanoTime());
    }
    return answer;
  }

  private synchronized Answer last() {
    return last;
  }

  /** Not ready: the check runs past its bound; what it waits for, how long, and what it said last. */
  private Readiness late(Check c) {
    long now = System.nanoTime();
    StringBuilder detail = new StringBuilder(subject.get()).append(" did not answer within ")
        .append(bound.toSeconds()).append(" s (Nomad gives a Probe 5 s): waited for ")
        .append(TimeUnit.NANOSECONDS.toSeconds(now - c.startedNanos())).append(" s so far");
    Answer before = last();
    if (before == null) {
      detail.append("; no answer yet since the plugin started");
    } else {
      detail.append("; its last answer, ").append(TimeUnit.NANOSECONDS.toSeconds(now - before.atNanos()))
          .append(" s ago: ").append(before.readiness().ready() ? "ready, " : "not ready, ")
          .append(before.readiness().detail());
    }
    return Readiness.notReady(detail.toString());
  }
}
