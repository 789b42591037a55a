package dev.caravan.csi.service;

import dev.caravan.csi.backend.AccessType;
import java.util.List;
import java.util.Optional;

/**
 * A validated VolumeCapability.
 *
 * @param fsType the requested filesystem for mount access; empty means "the plugin's default"
 * @param readOnlyMode the access mode itself is read-only (SINGLE_NODE_READER_ONLY)
 */
public record Capability(
    AccessType accessType, Optional<String> fsType, List<String> mountFlags, boolean readOnlyMode) {
  public Capability {
    mountFlags = List.copyOf(mountFlags);
  }
}
