package dev.caravan.csi.backend;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
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

    for (int probe = 0; probe < 2; probe++) {
      long start = System.nanoTime();
      Readiness answer = r.get();
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(BOUND.multipliedBy(3));
      assertThat(answer.ready()).isFalse();
      assertThat(answer.detail()).isEqualTo("the stuck thing did not answer within 1 s (Nomad gives a Probe 5 s)");
    }
    assertThat(checks).as("one check, however many probes wait for it").hasValue(1);

    release.countDown();
    assertThat(r.get()).isEqualTo(Readiness.ready("back"));
    int answered = checks.get();
    assertThat(r.get()).isEqualTo(Readiness.ready("back"));
    assertThat(checks).as("a probe after an answer checks again").hasValue(answered + 1);
  }

  @Test
  void aCheckThatFailsIsNotReadyNamingItsSubject() {
    BoundedReadiness r = new BoundedReadiness("the pool status", () -> {
      throw new IllegalStateException("ioctl failed");
    }, Duration.ofSeconds(5));
    Readiness answer = r.get();
    assertThat(answer.ready()).isFalse();
    assertThat(answer.detail()).startsWith("the pool status: ").contains("ioctl failed");
  }
}
