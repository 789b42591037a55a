package dev.caravan.csi.observe.inspect;

import dev.caravan.csi.peer.v1.NodeLayersAnswer;
import java.time.Duration;
import java.util.Optional;

/** The other nodes' plugins of a multi-node plugin, as the claim-chain inspector asks them (peer channel, mTLS). */
public interface PeerNodes {
  /** How long the inspector waits for one node's answer: an inspect must answer even with a node gone. */
  Duration DEADLINE = Duration.ofSeconds(2);

  /** The node a volume id names as its owner, if the id names one. */
  Optional<String> owner(String volumeId);

  /** That node's own layers of the volume; throws, naming the node and the status, when it does not answer. */
  NodeLayersAnswer layers(String node, String volumeId);
}
