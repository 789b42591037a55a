package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.observe.inspect.Chain;
import dev.caravan.csi.support.Json;
import java.util.List;
import java.util.Map;

/** A volume's chain as {@code caravan inspect --json} prints it, and paths through its objects. */
final class ChainJson {
  private ChainJson() {}

  /** The chain of {@code volumeId} as {@code node}'s inspector shows it, as the JSON the CLI reads. */
  @SuppressWarnings("unchecked") // the chain's JSON is objects and arrays
  static Map<String, Object> inspect(PeerCluster cluster, String node, String volumeId) {
    Chain chain = cluster.node(node).plugin.observability().inspector().inspect(volumeId);
    assertThat(chain.toText()).as("the text of the chain on %s", node).contains("replication:");
    return (Map<String, Object>) Json.parse(Json.write(chain.toJson()));
  }

  /** The value at a path through the chain's JSON objects, as text. */
  static String at(Map<String, Object> json, String... path) {
    return String.valueOf(value(json, path));
  }

  static Object value(Map<String, Object> json, String... path) {
    Object o = json;
    for (String p : path) {
      assertThat(o).as("the JSON at %s", p).isInstanceOf(Map.class);
      o = ((Map<?, ?>) o).get(p);
    }
    return o;
  }

  @SuppressWarnings("unchecked") // the chain's JSON is objects and arrays
  static Map<String, Object> object(Map<String, Object> json, String... path) {
    return (Map<String, Object>) value(json, path);
  }

  /** The chain's findings with {@code code}. */
  @SuppressWarnings("unchecked") // the chain's findings are JSON objects
  static List<Map<String, Object>> findings(Map<String, Object> chain, String code) {
    return ((List<Map<String, Object>>) chain.get("findings")).stream().filter(f -> f.get("code").equals(code)).toList();
  }
}
