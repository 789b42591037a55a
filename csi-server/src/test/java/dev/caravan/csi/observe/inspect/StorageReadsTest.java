package dev.caravan.csi.observe.inspect;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The inspector's bounded storage reads: a read that does not come back ends the wait, not the inspection. */
class StorageReadsTest {
  @Test
  void aStuckReadIsLateByItsDeadlineAndLaterInspectionsJoinItInsteadOfStartingAnother() throws Exception {
    StorageReads reads = new StorageReads();
    CountDownLatch storageBack = new CountDownLatch(1);
    AtomicInteger started = new AtomicInteger();
    CompletableFuture<String> first = reads.start("describe v", () -> {
      started.incrementAndGet();
      try {
        storageBack.await(); // a pool whose I/O is suspended: the read waits in the kernel
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return "evidence";
    });
    long t0 = System.nanoTime();
    StorageReads.Answer<String> late = StorageReads.await(first, t0 + TimeUnit.MILLISECONDS.toNanos(200));
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("the wait ends at the deadline")
        .isLessThan(Duration.ofSeconds(2));
    assertThat(late.late()).isTrue();

    CompletableFuture<String> second = reads.start("describe v", () -> "a second read");
    StorageReads.Answer<String> stillLate = StorageReads.await(second, System.nanoTime() + 50_000_000);
    assertThat(stillLate.late()).as("the next inspection waits for the same read").isTrue();

    storageBack.countDown();
    assertThat(StorageReads.await(second, System.nanoTime() + TimeUnit.SECONDS.toNanos(5)).value())
        .as("joined: the first read's answer").contains("evidence");
    assertThat(started).as("one read of the stuck storage, not one per inspection").hasValue(1);
    // Once it has answered, the next inspection reads afresh.
    assertThat(StorageReads.await(reads.start("describe v", () -> "fresh"), System.nanoTime()
        + TimeUnit.SECONDS.toNanos(5)).value()).contains("fresh");
  }

  @Test
  void aReadThatFailsGivesItsException() {
    StorageReads reads = new StorageReads();
    StorageReads.Answer<String> failed = StorageReads.await(reads.start("health v", () -> {
      throw new IllegalStateException("pool tank is SUSPENDED");
    }), System.nanoTime() + TimeUnit.SECONDS.toNanos(5));
    assertThat(failed.late()).isFalse();
    assertThat(failed.error()).hasValueSatisfying(e -> assertThat(e).hasMessage("pool tank is SUSPENDED"));
  }
}
