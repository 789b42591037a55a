package dev.caravan.csi.peer;

import dev.caravan.csi.backend.CsiException;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeSet;
import javax.net.ssl.SSLException;

/**
 * One {@link PeerClient} per peer node, replaced when the node's address changes, and when its last
 * connection attempt failed: a peer that was down is tried afresh at the next call, not after gRPC's
 * reconnect backoff.
 */
final class PeerClients implements AutoCloseable {
  private final PeerSet peers;
  private final CredentialFiles files;
  private final Duration timeout;
  private final Map<String, PeerClient> clients = new HashMap<>();

  PeerClients(PeerSet peers, CredentialFiles files, Duration timeout) {
    this.peers = peers;
    this.files = files;
    this.timeout = timeout;
  }

  PeerSet peers() {
    return peers;
  }

  /** The client for {@code node}; UNAVAILABLE, naming the known nodes, when it is not a peer. */
  PeerClient client(String node) {
    Map<String, PeerAddress> now = peers.current();
    PeerAddress address = now.get(node);
    if (address == null) {
      throw new CsiException(CsiException.Kind.UNAVAILABLE, "node " + node + " is not in the peer set "
          + new TreeSet<>(now.keySet()) + ": add it (--peer " + node + "=HOST:PORT, or run the plugin there so"
          + " that discovery finds it), then retry");
    }
    synchronized (clients) {
      PeerClient c = clients.get(node);
      if (c != null && (!c.address().equals(address) || c.failing())) {
        c.close();
        c = null;
      }
      if (c == null) {
        try {
          c = new PeerClient(node, address, files, timeout);
        } catch (SSLException e) {
          throw new CsiException(CsiException.Kind.UNAVAILABLE, "cannot set up TLS to node " + node + ": "
              + e.getMessage());
        }
        clients.put(node, c);
      }
      return c;
    }
  }

  @Override
  public void close() {
    synchronized (clients) {
      clients.values().forEach(PeerClient::close);
      clients.clear();
    }
  }
}
