package dev.caravan.csi.testing;

import java.util.ArrayList;
import java.util.List;

/**
 * Delta debugging (ddmin) of a failing sequence of steps: drops chunks, then single steps, while the
 * shorter sequence still fails the same way. The model-based tests report what it leaves, so that a
 * counterexample reads as a handful of steps rather than hundreds.
 */
public final class Ddmin {
  /** Whether a shorter sequence still breaks the invariant the original broke. */
  @FunctionalInterface
  public interface StillFails<T> {
    boolean test(List<T> steps) throws Exception;
  }

  private Ddmin() {}

  /**
   * The shortest sequence found before {@code deadlineNanos} ({@link System#nanoTime}); when the
   * deadline ends the search, the result is short but may not be minimal.
   */
  public static <T> List<T> shrink(List<T> failing, StillFails<T> stillFails, long deadlineNanos) throws Exception {
    List<T> steps = new ArrayList<>(failing);
    int n = 2;
    while (steps.size() >= 2 && System.nanoTime() < deadlineNanos) {
      int chunk = (steps.size() + n - 1) / n;
      boolean reduced = false;
      for (int start = 0; start < steps.size() && System.nanoTime() < deadlineNanos; start += chunk) {
        List<T> without = new ArrayList<>(steps.subList(0, start));
        without.addAll(steps.subList(Math.min(steps.size(), start + chunk), steps.size()));
        if (stillFails.test(without)) {
          steps = without;
          n = Math.max(n - 1, 2);
          reduced = true;
          break;
        }
      }
      if (!reduced) {
        if (n >= steps.size()) {
          break;
        }
        n = Math.min(steps.size(), n * 2);
      }
    }
    return steps;
  }
}
