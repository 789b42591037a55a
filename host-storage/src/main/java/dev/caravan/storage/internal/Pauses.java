package dev.caravan.storage.internal;

import dev.caravan.storage.StorageException;
import java.time.Duration;

/** The pause between two tries of something the kernel or a daemon is still busy with. */
public final class Pauses {
  private Pauses() {}

  /**
   * Sleeps for {@code duration}. An interrupt ends the wait: the thread's interrupt flag is set
   * again and a {@link StorageException} with {@code interruptedMessage} is thrown, so the caller's
   * retry loop stops.
   */
  public static void pause(Duration duration, String interruptedMessage) {
    try {
      Thread.sleep(duration);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StorageException(interruptedMessage, e);
    }
  }
}
