package dev.caravan.csi.peer;

import java.util.Map;
import java.util.TreeMap;

/** A fixed peer set, from {@code --peer NODE=HOST:PORT} flags. */
public record StaticPeers(Map<String, PeerAddress> peers) implements PeerSet {
  public StaticPeers {
    peers = Map.copyOf(peers);
  }

  /** Parses {@code NODE=HOST:PORT} entries; this node's own entry, if listed, is left out. */
  public static StaticPeers parse(Iterable<String> entries, String self) {
    Map<String, PeerAddress> out = new TreeMap<>();
    for (String e : entries) {
      int eq = e.indexOf('=');
      if (eq <= 0) {
        throw new IllegalArgumentException("--peer '" + e + "' is not NODE=HOST:PORT");
      }
      String node = e.substring(0, eq);
      if (!NodeNames.valid(node)) {
        throw new IllegalArgumentException("--peer '" + e + "': " + NodeNames.RULE);
      }
      PeerAddress address = PeerAddress.parse("--peer " + node, e.substring(eq + 1));
      if (out.put(node, address) != null) {
        throw new IllegalArgumentException("--peer lists node " + node + " twice");
      }
    }
    out.remove(self);
    return new StaticPeers(out);
  }

  @Override
  public Map<String, PeerAddress> current() {
    return peers;
  }
}
