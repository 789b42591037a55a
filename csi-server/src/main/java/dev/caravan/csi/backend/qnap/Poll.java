package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.CsiException;
import java.time.Duration;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Waits for asynchronous appliance work: asks {@code probe} until it answers, sleeping 50 ms, then
 * doubling up to 2 s between asks, and gives up after {@code limit} with UNAVAILABLE (the CO retries;
 * the retry finds the work where the appliance left it).
 */
final class Poll {
  private static final Duration FIRST = Duration.ofMillis(50);
  private static final Duration MAX = Duration.ofSeconds(2);

  private Poll() {}

  static <T> T until(Duration limit, String what, Supplier<Optional<T>> probe) {
    long deadline = System.nanoTime() + limit.toNanos();
    Duration pause = FIRST;
    while (true) {
      Optional<T> done = probe.get();
      if (done.isPresent()) {
        return done.get();
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new CsiException(CsiException.Kind.UNAVAILABLE, "the QNAP appliance has not finished " + what
            + " after " + limit.toSeconds() + " s; a retry continues where it is");
      }
      try {
        Thread.sleep(Math.min(pause.toMillis(), Math.max(1, left / 1_000_000)));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new CsiException(CsiException.Kind.ABORTED, "interrupted while waiting for the QNAP appliance: " + what);
      }
      pause = pause.multipliedBy(2).compareTo(MAX) > 0 ? MAX : pause.multipliedBy(2);
    }
  }
}
