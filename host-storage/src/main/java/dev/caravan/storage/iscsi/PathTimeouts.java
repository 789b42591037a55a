package dev.caravan.storage.iscsi;

import java.time.Duration;
import java.util.Objects;

/**
 * How quickly a session's I/O gives up on a dead portal, written into every node record {@link
 * Iscsi#login} uses: open-iscsi's {@code node.session.timeo.replacement_timeout} and the iSCSI ping
 * ({@code node.conn[0].timeo.noop_out_interval}, {@code node.conn[0].timeo.noop_out_timeout}).
 *
 * <p>When a ping goes unanswered for {@code noopOutTimeout}, the connection is declared failed and
 * the SCSI layer queues the session's I/O; after {@code replacementTimeout} without a successful
 * re-login that I/O is failed upwards. Under dm-multipath "upwards" is the multipath map, which
 * sends it down another path: the replacement timeout is how long writes stall before failing
 * over. open-iscsi's own default (iscsid.conf) is 120 s, meant for a disk without a second path.
 *
 * <p>multipathd, once a path is in a map, writes its own {@code fast_io_fail_tmo} (5 s unless
 * multipath.conf says otherwise) into the session's {@code recovery_tmo}, the kernel's copy of the
 * replacement timeout: the guest test saw 5 s on both sessions, before a portal failure and after
 * the path came back. The record's value is what holds until then, and wherever multipathd leaves
 * the session alone (a {@code fast_io_fail_tmo} of {@code off}, which multipathd cannot apply to
 * iSCSI, or no multipathd at all).
 */
public record PathTimeouts(Duration replacementTimeout, Duration noopOutInterval, Duration noopOutTimeout) {
  /**
   * For LUNs reached through dm-multipath (Caravan's case): replacement after 15 s, a ping every
   * 5 s that fails the connection when unanswered for 10 s. These are the values open-iscsi's
   * README gives for dm-multipath (its section "iSCSI settings for dm-multipath": a replacement
   * timeout of 5 to 15 s, pings at 5/10 s); the upper end of the range, so a short network hiccup
   * is ridden out by the re-login rather than turned into a failed path. With every path down,
   * multipath's own {@code no_path_retry} decides how long I/O queues, not the iSCSI layer.
   */
  public static final PathTimeouts MULTIPATH =
      new PathTimeouts(Duration.ofSeconds(15), Duration.ofSeconds(5), Duration.ofSeconds(10));

  static final String REPLACEMENT_TIMEOUT = "node.session.timeo.replacement_timeout";
  static final String NOOP_OUT_INTERVAL = "node.conn[0].timeo.noop_out_interval";
  static final String NOOP_OUT_TIMEOUT = "node.conn[0].timeo.noop_out_timeout";

  /**
   * @throws IllegalArgumentException unless each is a whole number of seconds, not negative (zero
   *     is open-iscsi's "fail at once" for the replacement timeout and "no pings" for the ping
   *     interval), and the ping timeout is positive when pings are sent
   */
  public PathTimeouts {
    requireWholeSeconds("replacementTimeout", replacementTimeout);
    requireWholeSeconds("noopOutInterval", noopOutInterval);
    requireWholeSeconds("noopOutTimeout", noopOutTimeout);
    if (!noopOutInterval.isZero() && noopOutTimeout.isZero()) {
      throw new IllegalArgumentException(
          "noopOutTimeout must be positive when noopOutInterval is (" + noopOutInterval + "): a ping"
              + " nobody waits for detects nothing");
    }
  }

  private static void requireWholeSeconds(String name, Duration value) {
    Objects.requireNonNull(value, name);
    if (value.isNegative() || value.toNanosPart() != 0 || value.toSeconds() > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(
          name + " must be a whole number of seconds, zero or more (open-iscsi counts in seconds): " + value);
    }
  }
}
