package dev.caravan.csi.observe.inspect;

import dev.caravan.csi.support.Json;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One volume's claim chain as the inspector saw it.
 *
 * @param known whether any layer knows the volume (404 otherwise)
 * @param layers backend, attachment, staging, published, unrecorded_mounts, journal, replication (a
 *     volume this node replicates or holds a copy of), nomad, and with peers peer_nodes
 */
public record Chain(
    String volumeId, String nodeId, boolean known, String inspectedAt, Map<String, Object> layers,
    List<Finding> findings) {

  public Map<String, Object> toJson() {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("volume_id", volumeId);
    m.put("node_id", nodeId);
    m.put("inspected_at", inspectedAt);
    // An info finding reports agreement (a peer that holds nothing, say), not a disagreement.
    m.put("agree", findings.stream().allMatch(f -> f.severity().equals("info")));
    m.put("findings", findings.stream().map(Finding::toJson).toList());
    m.put("layers", layers);
    return m;
  }

  /** For people: the findings first (what to do), then every layer's state and evidence. */
  public String toText() {
    StringBuilder out = new StringBuilder();
    out.append("volume ").append(volumeId).append(" on node ").append(nodeId).append(" (").append(inspectedAt)
        .append(")\n\n");
    if (findings.isEmpty()) {
      out.append("All layers agree.\n");
    } else {
      out.append(findings.size()).append(findings.size() == 1 ? " finding:\n" : " findings:\n");
      for (Finding f : findings) {
        out.append("  [").append(f.severity()).append("] ").append(f.message()).append('\n');
        out.append("      next: ").append(f.next()).append('\n');
      }
    }
    out.append('\n');
    layers.forEach((name, value) -> {
      out.append(name).append(":\n");
      for (String line : Json.pretty(value).strip().split("\n", -1)) {
        out.append("  ").append(line).append('\n');
      }
    });
    return out.toString();
  }
}
