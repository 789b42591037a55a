package dev.caravan.csi.dhv;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The exact variable sets Nomad gives each operation (nomad-dhv.md §3.1), and those
 * docs/dhv-deferred-binding.md defines for publish and unpublish. A node is a node id plus that
 * node's {@code host_volumes_dir}; two nodes on this host share the plugin's data directory.
 */
public final class DhvEnv {
  public record Node(String id, Path volumesDir, Path pluginDir) {}

  /**
   * One volume as Nomad's server knows it.
   *
   * @param parameters {@code DHV_PARAMETERS} exactly as Nomad writes it ({@code null} when none)
   */
  public record Volume(String id, String name, String namespace, long minBytes, long maxBytes, String parameters) {
    Volume withMin(long bytes) {
      return new Volume(id, name, namespace, bytes, maxBytes, parameters);
    }

    Volume withParameters(String json) {
      return new Volume(id, name, namespace, minBytes, maxBytes, json);
    }
  }

  private DhvEnv() {}

  static Map<String, String> fingerprint() {
    return Map.of("DHV_OPERATION", "fingerprint");
  }

  /** The 11 create variables. */
  public static Map<String, String> create(Node n, Volume v) {
    Map<String, String> env = common("create", n, v);
    env.put("DHV_CAPACITY_MIN_BYTES", Long.toString(v.minBytes()));
    env.put("DHV_CAPACITY_MAX_BYTES", Long.toString(v.maxBytes()));
    return env;
  }

  /** The 10 delete variables, {@code DHV_CREATED_PATH} being what create returned. */
  public static Map<String, String> delete(Node n, Volume v, String createdPath) {
    Map<String, String> env = common("delete", n, v);
    env.put("DHV_CREATED_PATH", createdPath);
    return env;
  }

  /**
   * Nomad's delete after an initial create whose state it failed to save: no name or namespace, and
   * {@code DHV_CREATED_PATH} is the whole volumes directory.
   */
  static Map<String, String> autoDelete(Node n, Volume v) {
    Map<String, String> env = common("delete", n, v);
    env.put("DHV_NAMESPACE", "");
    env.put("DHV_VOLUME_NAME", "");
    env.put("DHV_CREATED_PATH", n.volumesDir().toString());
    return env;
  }

  static Map<String, String> publish(Node n, Volume v, String allocId, String accessMode, boolean readOnly) {
    Map<String, String> env = common("publish", n, v);
    env.put("DHV_ALLOC_ID", allocId);
    env.put("DHV_ACCESS_MODE", accessMode);
    env.put("DHV_ATTACHMENT_MODE", "file-system");
    env.put("DHV_READ_ONLY", Boolean.toString(readOnly));
    return env;
  }

  static Map<String, String> unpublish(Node n, Volume v, String allocId) {
    Map<String, String> env = common("unpublish", n, v);
    env.put("DHV_ALLOC_ID", allocId);
    return env;
  }

  /**
   * What an operator sets to run {@code release} by hand (README, "Dynamic Host Volumes"): no more
   * than this.
   */
  static Map<String, String> release(Node n, Volume v, String initiator) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("DHV_OPERATION", "release");
    env.put("DHV_VOLUME_ID", v.id());
    env.put("DHV_NODE_ID", n.id());
    env.put("DHV_VOLUMES_DIR", n.volumesDir().toString());
    env.put("DHV_RELEASE_INITIATOR", initiator);
    return env;
  }

  private static Map<String, String> common(String op, Node n, Volume v) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("DHV_OPERATION", op);
    env.put("DHV_VOLUMES_DIR", n.volumesDir().toString());
    env.put("DHV_PLUGIN_DIR", n.pluginDir().toString());
    env.put("DHV_NODE_POOL", "default");
    env.put("DHV_NAMESPACE", v.namespace());
    env.put("DHV_VOLUME_NAME", v.name());
    env.put("DHV_VOLUME_ID", v.id());
    env.put("DHV_NODE_ID", n.id());
    env.put("DHV_PARAMETERS", v.parameters());
    return env;
  }
}
