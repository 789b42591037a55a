package dev.caravan.storage.iscsi;

import java.util.Optional;

/**
 * What the caller of a {@link SessionSweeper} knows and the host does not: which sessions it
 * still wants (its journal names their targets), and how to keep its own logins and logouts of a
 * target away while the sweeper logs a session to it out.
 */
public interface SessionClaims {
  /**
   * Whether the caller wants {@code session} kept: a volume it has staged, or is staging, uses its
   * target. Asked at every sweep, and again under {@link #hold} right before a logout.
   */
  boolean wants(IscsiSession session);

  /**
   * Keeps the caller from attaching or detaching anything through {@code session}'s target until
   * the returned hold is closed; empty when such an operation is under way (the session is then
   * left alone, and its grace period starts again). The default holds nothing: for callers that
   * attach nothing while sweeping.
   */
  default Optional<Hold> hold(IscsiSession session) {
    return Optional.of(() -> {});
  }

  /** A hold taken by {@link #hold}. */
  interface Hold extends AutoCloseable {
    @Override
    void close();
  }
}
