package dev.caravan.csi.peer;

import java.nio.file.Path;
import java.time.Duration;

/**
 * How this plugin instance takes part in a multi-node plugin.
 *
 * @param listen where this node's peer endpoint listens
 * @param cert this node's certificate chain (PEM), naming its node id as a DNS subjectAltName
 * @param key its private key (PEM)
 * @param ca the CA certificate(s) (PEM) every peer's certificate must chain to
 * @param peers the other nodes
 * @param reserveBytes free bytes placement keeps back on this node
 * @param timeout the longest a forwarded call may take (the CO's own deadline, if shorter, wins)
 */
public record PeerSettings(
    PeerAddress listen, Path cert, Path key, Path ca, PeerSet peers, long reserveBytes, Duration timeout) {
  public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);
}
