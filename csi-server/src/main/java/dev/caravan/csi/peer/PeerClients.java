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
 * reconnect backoff. All are replaced when the credential files change: a connection keeps the
 * certificates of its handshake, and the peer it reaches must pass the files as they are now.
 */
final class PeerClients implements AutoCloseable {
  private final PeerSet peers;
  private final CredentialFiles files;
  private final Duration timeout;
  private final RefusalLog refusals;
  private final Map<String, PeerClient> clients = new HashMap<>();

  PeerClients(PeerSet peers, CredentialFiles files, Duration timeout, RefusalLog refusals) {
    this.peers = peers;
    this.files = files;
    this.timeout = timeout;
    this.refusals = refusals;
    files.onChange(this::retireAll);
  }

  private void retireAll() {
    synchronized (clients) {
      clients.values().forEach(PeerClient::retire);
      clients.clear();
    }
  }

  PeerSet peers() {
    return peers;
  }

  /** The client for {@code node}; UNAVAILABLE, naming the known nodes, when it is not a peer. */
  PeerClient client(String node) {
    files.current(); // a change of the files since the last call retires the connections made under the old ones
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
          c = new PeerClient(node, address, files, timeout, refusals);
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
