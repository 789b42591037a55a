package dev.caravan.storage.iscsi;

import java.util.Objects;

/** A target a portal offered in SendTargets discovery, and the portal group it named. */
public record DiscoveredTarget(String target, Portal portal, int tpgt) {
  public DiscoveredTarget {
    Objects.requireNonNull(target, "target");
    Objects.requireNonNull(portal, "portal");
  }
}
