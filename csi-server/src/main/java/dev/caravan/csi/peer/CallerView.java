package dev.caravan.csi.peer;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.net.InetSocketAddress;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What a failed peer call says when the handshake, not the network, failed: the node refused our
 * certificate, or presented one we refuse. A refusal of ours is recorded in this node's
 * {@link RefusalLog}; the node that refused ours logs it on its side.
 */
final class CallerView {
  private static final Pattern ALERT = Pattern.compile("Received fatal alert: (\\S+)");

  private CallerView() {}

  /** The message for a refused handshake or call, or empty when the failure was something else. */
  static Optional<String> refusal(String node, PeerAddress address, StatusRuntimeException e, RefusalLog refusals) {
    String who = "node " + node;
    String at = " (peer endpoint " + address + ")";
    Metadata trailers = Status.trailersFromThrowable(e);
    if (trailers != null && trailers.containsKey(PeerServer.REFUSED)) {
      return Optional.of(who + " refused our certificate (" + trailers.get(PeerServer.REFUSED) + ": it no longer"
          + " accepts the one this connection was opened with; its log names the rule)" + at);
    }
    Optional<PeerRefusal> ours = PeerRefusal.in(e);
    if (ours.isPresent()) {
      PeerRefusal r = ours.get();
      refusals.refused(r.reason(), new InetSocketAddress(address.host(), address.port()), r.subject(),
          r.names(), r.getMessage());
      return Optional.of(switch (r.reason()) {
        case WRONG_NODE -> who + " presented a certificate for " + String.join(", ", r.names()) + ", not " + node + at
            + ": the address is another node's, or stale (--peer, or what discovery found)";
        case EXPIRED -> who + " presented a certificate that has expired or is not valid yet (" + r.subject() + ")" + at;
        case NO_CERTIFICATE -> who + " presented no certificate" + at;
        default -> who + " presented a certificate that does not chain to our peer CA (" + r.subject() + ")" + at
            + ": " + r.getMessage();
      });
    }
    for (Throwable c = e; c != null; c = c.getCause()) {
      Matcher m = ALERT.matcher(String.valueOf(c.getMessage()));
      if (m.find()) {
        return Optional.of(who + " refused our certificate (TLS alert " + m.group(1) + "; its log names the rule)" + at);
      }
    }
    return Optional.empty();
  }
}
