package dev.caravan.storage.iscsi;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The leaked-session sweeper's decision, as a pure function of what one sweep saw and what earlier
 * sweeps remembered: no I/O, so every rule is tested on its own ({@code SweepDecisionsTest}).
 *
 * <p>A session becomes a logout candidate only when it is in the caller's scope, the caller does not
 * want it, and nothing uses its disks; it is logged out only when the same session (same number,
 * target and portal) was seen that way by an earlier sweep at least {@code grace} ago, and by every
 * sweep since. Anything else (wanted, in use, out of scope, gone, a new session in its place) forgets
 * it, so the clock starts again.
 */
final class SweepDecisions {
  private SweepDecisions() {}

  /** A session's identity: a new login to the same target and portal is another session. */
  record SessionKey(int sid, String target, Portal portal) {
    static SessionKey of(IscsiSession s) {
      return new SessionKey(s.sid(), s.target(), s.portal());
    }
  }

  /**
   * One session as one sweep saw it.
   *
   * @param users what uses its disks ({@code sdb mounted at /mnt}); empty when nothing does, and not
   *     looked at (empty) when it is out of scope or wanted
   */
  record Seen(IscsiSession session, boolean inScope, boolean wanted, List<String> users) {
    Seen {
      Objects.requireNonNull(session, "session");
      users = List.copyOf(users);
    }
  }

  enum Verdict {
    OUT_OF_SCOPE,
    WANTED,
    IN_USE,
    /** Unused, but not yet for the grace period: seen again later, it may be logged out. */
    UNUSED_WAITING,
    LOG_OUT
  }

  record Decision(IscsiSession session, Verdict verdict, String detail) {}

  /**
   * @param unusedSince the sessions still to remember, each with when it was first seen unused
   *     ({@link System#nanoTime} scale)
   */
  record Plan(Map<SessionKey, Long> unusedSince, List<Decision> decisions) {
    Plan {
      unusedSince = Map.copyOf(unusedSince);
      decisions = List.copyOf(decisions);
    }
  }

  static Plan decide(Map<SessionKey, Long> unusedSince, List<Seen> seen, long now, Duration grace) {
    if (grace.isNegative() || grace.isZero()) {
      throw new IllegalArgumentException("grace must be positive: " + grace);
    }
    Map<SessionKey, Long> next = new HashMap<>();
    List<Decision> decisions = new ArrayList<>();
    for (Seen s : seen) {
      IscsiSession session = s.session();
      if (!s.inScope()) {
        decisions.add(new Decision(session, Verdict.OUT_OF_SCOPE, "not a session the sweeper may touch"));
      } else if (s.wanted()) {
        decisions.add(new Decision(session, Verdict.WANTED, "wanted by the caller"));
      } else if (!s.users().isEmpty()) {
        decisions.add(new Decision(session, Verdict.IN_USE, String.join(", ", s.users())));
      } else {
        SessionKey key = SessionKey.of(session);
        Long since = unusedSince.get(key);
        if (since == null) {
          next.put(key, now);
          decisions.add(new Decision(session, Verdict.UNUSED_WAITING, "first seen unused"));
        } else if (now - since >= grace.toNanos()) {
          next.put(key, since); // kept until the logout is done: a refused one is retried later
          decisions.add(new Decision(session, Verdict.LOG_OUT,
              "unused for " + Duration.ofNanos(now - since).toSeconds() + " s (grace " + grace.toSeconds() + " s)"));
        } else {
          next.put(key, since);
          decisions.add(new Decision(session, Verdict.UNUSED_WAITING,
              "unused for " + Duration.ofNanos(now - since).toSeconds() + " s of the " + grace.toSeconds()
                  + " s grace"));
        }
      }
    }
    return new Plan(next, decisions);
  }
}
