package dev.caravan.csi.peer;

import java.util.Map;

/**
 * The other plugin instances of this plugin id, by node id: where each serves its peer endpoint.
 * Read at every use, so a discovered set may change between calls.
 */
public interface PeerSet {
  /**
   * The current peers (this node excluded). Throws {@link dev.caravan.csi.backend.CsiException} of
   * kind UNAVAILABLE when the set cannot be known right now.
   */
  Map<String, PeerAddress> current();
}
