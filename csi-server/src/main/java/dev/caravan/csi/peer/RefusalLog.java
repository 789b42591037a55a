package dev.caravan.csi.peer;

import dev.caravan.csi.observe.metrics.Metrics;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Where this node's refusals of peers go: each one counted in {@code caravan_peer_refusals_total} by
 * reason, and logged on this node, the one that refused, with the peer's address, the certificate it
 * presented and the rule it broke. One line per reason and peer host a minute: a peer retrying, or a
 * scanner, would otherwise fill the log; the next line says how many were left out.
 */
final class RefusalLog {
  private static final System.Logger LOG = System.getLogger(RefusalLog.class.getName());
  static final Duration WINDOW = Duration.ofMinutes(1);
  /** Past this many reason and host pairs, the ones whose minute is over are forgotten. */
  private static final int TRACKED = 1024;

  private final String self;
  private final Metrics metrics;
  private final Clock clock;
  private final Map<String, Window> windows = new HashMap<>();

  private static final class Window {
    Instant start;
    long suppressed;

    Window(Instant start) {
      this.start = start;
    }
  }

  RefusalLog(String self, Metrics metrics, Clock clock) {
    this.self = self;
    this.metrics = metrics;
    this.clock = clock;
  }

  /**
   * Records one refusal.
   *
   * @param peer the peer's address (host and port)
   * @param subject the subject of the certificate it presented, empty if none
   * @param names the DNS names of that certificate's subjectAltName
   * @param detail what the TLS stack said, or empty
   */
  void refused(RefusalReason reason, SocketAddress peer, String subject, List<String> names, String detail) {
    metrics.peerRefusal(reason.label);
    String host = peer instanceof InetSocketAddress a ? a.getHostString() : String.valueOf(peer);
    Instant now = clock.instant();
    long left;
    synchronized (windows) {
      Window w = windows.get(reason.label + " " + host);
      if (w != null && now.isBefore(w.start.plus(WINDOW))) {
        w.suppressed++;
        return;
      }
      if (w == null && windows.size() >= TRACKED) {
        windows.values().removeIf(o -> !now.isBefore(o.start.plus(WINDOW)));
      }
      left = w == null ? 0 : w.suppressed;
      windows.put(reason.label + " " + host, new Window(now));
    }
    String presented = subject.isEmpty() ? "" : " (certificate subject " + subject + ", subjectAltName DNS " + names
        + ")";
    LOG.log(System.Logger.Level.WARNING, "node {0} refused peer {1}: {2}{3}{4}{5}", self, text(peer), reason.rule,
        presented, detail.isEmpty() ? "" : ": " + detail,
        left == 0 ? "" : " (" + left + " more refusal(s) of " + host + " for this reason in the minute before this"
            + " line were not logged)");
  }

  private static String text(SocketAddress peer) {
    if (peer instanceof InetSocketAddress a) {
      String host = a.getHostString();
      return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + a.getPort();
    }
    return String.valueOf(peer);
  }
}
