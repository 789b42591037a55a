package dev.caravan.csi.backend;

import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;

/**
 * What every backend is constructed with.
 *
 * @param nodeId this node's CSI node id (also its topology segment value)
 * @param dataDir where the backend and the node journal keep their state on the host
 * @param options backend-specific settings from the config file ({@code file.*}, {@code local.*}, ...)
 * @param nodeUsage what this node has staged and published (its node journal)
 * @param keyCosts the cost of the keys of encrypted volumes made from now on
 */
public record BackendConfig(
    String nodeId, Path dataDir, Map<String, String> options, NodeUsage nodeUsage, KeyCosts keyCosts) {
  public BackendConfig {
    options = Map.copyOf(options);
    Objects.requireNonNull(keyCosts, "keyCosts");
  }

  /** With the default key costs ({@link KeyCosts#DEFAULT}). */
  public BackendConfig(String nodeId, Path dataDir, Map<String, String> options, NodeUsage nodeUsage) {
    this(nodeId, dataDir, options, nodeUsage, KeyCosts.DEFAULT);
  }
}
