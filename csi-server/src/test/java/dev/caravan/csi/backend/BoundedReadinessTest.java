package dev.caravan.csi.backend;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class BoundedReadinessTest {
  private static final Duration BOUND = Duration.ofSeconds(1);

  @Test
  void aCheckThatDoesNotAnswerIsNotReadyWithinTheBoundAndRunsOnceForEveryProbeMeanwhile() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger checks = new AtomicInteger();
    BoundedReadiness r = new BoundedReadiness("the stuck thing", () -> {
      checks.incrementAndGet();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return Readiness.ready("back");
    }, BOUND);

    long start = System.nanoTime();
    Readiness first = r.get();
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(BOUND.multipliedBy(3));
    assertThat(first.ready()).isFalse();
    assertThat(first.detail()).isEqualTo("the stuck thing did not answer within 1 s (Nomad gives a Probe 5 s):"
        + " waited for 1 s so far; no answer yet since the plugin started");
    // Past the bound, a Probe does not wait another bound for the same stuck check: it answers at once.
    for (int probe = 0; probe < 3; probe++) {
      long again = System.nanoTime();
      Readiness answer = r.get();
      assertThat(Duration.ofNanos(System.nanoTime() - again)).as("Probe %s past the bound", probe)
          .isLessThan(BOUND.dividedBy(2));
      assertThat(answer.ready()).isFalse();
      assertThat(answer.detail()).startsWith("the stuck thing did not answer within 1 s (Nomad gives a Probe 5 s):");
    }
    assertThat(checks).as("one check, however many probes wait for it").hasValue(1);

    release.countDown();
    assertThat(answerOnceReleased(r)).isEqualTo(Readiness.ready("back"));
    int answered = checks.get();
    assertThat(r.get()).isEqualTo(Readiness.ready("back"));
    assertThat(checks).as("a probe after an answer checks again").hasValue(answered + 1);
  }

  @Test
  void aLateCheckNamesWhatItWaitsForNowAndTheLastAnswer() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    AtomicInteger checks = new AtomicInteger();
    AtomicReference<String> reading = new AtomicReference<>("nothing");
    BoundedReadiness r = new BoundedReadiness(() -> "the status of ZFS pool " + reading.get(), () -> {
      if (checks.incrementAndGet() > 1) {
        reading.set("tank");
        try {
          release.await();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      return Readiness.ready("pools tank=ONLINE");
    }, BOUND);
    assertThat(r.get()).isEqualTo(Readiness.ready("pools tank=ONLINE"));

    Readiness late = r.get();
    assertThat(late.ready()).isFalse();
    assertThat(late.detail()).startsWith("the status of ZFS pool tank did not answer within 1 s")
        .matches(".*; its last answer, [0-9]+ s ago: ready, pools tank=ONLINE");
    release.countDown();
    assertThat(answerOnceReleased(r)).isEqualTo(Readiness.ready("pools tank=ONLINE"));
  }

  @Test
  void aCheckThatFailsIsNotReadyNamingItsSubject() {
    BoundedReadiness r = new BoundedReadiness("the pool status", () -> {
      throw new IllegalStateException("ioctl failed");
    }, Duration.ofSeconds(5));
    Readiness answer = r.get();
    assertThat(answer.ready()).isFalse();
    assertThat(answer.detail()).isEqualTo("the pool status: ioctl failed");
  }

  /**
   * The answer once a released check has returned: the check's thread needs a moment to hand its
   * answer over, and a Probe in that moment is still answered late (the check is past its bound).
   */
  private static Readiness answerOnceReleased(BoundedReadiness r) throws InterruptedException {
    long until = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    Readiness answer = r.get();
    while (!answer.ready() && System.nanoTime() < until) {
      Thread.sleep(10);
      answer = r.get();
    }
    return answer;
  }
}
