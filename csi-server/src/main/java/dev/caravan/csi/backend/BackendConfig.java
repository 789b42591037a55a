package dev.caravan.csi.backend;

import java.nio.file.Path;
import java.util.Map;

/**
 * What every backend is constructed with.
 *
 * @param nodeId this node's CSI node id (also its topology segment value)
 * @param dataDir where the backend and the node journal keep their state on the host
 * @param options backend-specific settings from the config file ({@code file.*}, {@code local.*}, ...)
 * @param nodeUsage what this node has staged and published (its node journal)
 */
public record BackendConfig(String nodeId, Path dataDir, Map<String, String> options, NodeUsage nodeUsage) {
  public BackendConfig {
    options = Map.copyOf(options);
  }
}
