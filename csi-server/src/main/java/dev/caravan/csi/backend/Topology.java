package dev.caravan.csi.backend;

import java.util.Map;

/** A set of topology segments, e.g. {@code caravan.csi/node=n1}. */
public record Topology(Map<String, String> segments) {
  /** The segment key Caravan uses to pin a volume to the node that holds it. */
  public static final String NODE_KEY = "caravan.csi/node";

  public Topology {
    segments = Map.copyOf(segments);
  }

  public static Topology ofNode(String nodeId) {
    return new Topology(Map.of(NODE_KEY, nodeId));
  }

  /** Whether every segment of {@code required} is present with the same value here. */
  public boolean satisfies(Topology required) {
    return segments.entrySet().containsAll(required.segments().entrySet());
  }
}
