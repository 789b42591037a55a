package dev.caravan.storage.iscsi;

import java.util.Objects;

/**
 * What one sweep did with one session in its scope (sessions outside it are not reported: the
 * sweeper does not look at them).
 *
 * @param detail why, in words for a log line: what uses it, how long it has been unused, the error
 */
public record SweepOutcome(IscsiSession session, Action action, String detail) {
  public SweepOutcome {
    Objects.requireNonNull(session, "session");
    Objects.requireNonNull(action, "action");
    Objects.requireNonNull(detail, "detail");
  }

  public enum Action {
    /** The caller wants it. */
    KEPT_WANTED,
    /** A mount, a holder or an open multipath map uses one of its disks. */
    KEPT_IN_USE,
    /** Unused, but not for the whole grace period yet. */
    UNUSED_WAITING,
    /** The caller was attaching or detaching through its target: left for a later sweep. */
    SKIPPED_BUSY,
    /** It ended by itself before the sweeper logged it out. */
    GONE,
    /** Logged out (after flushing the unused multipath maps over its disks). */
    LOGGED_OUT,
    /** The flush or the logout failed; it is tried again at the next sweep. */
    FAILED
  }
}
