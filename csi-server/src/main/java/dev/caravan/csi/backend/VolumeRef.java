package dev.caravan.csi.backend;

import java.util.Map;

/** What the node side knows about a volume: its id and the context CreateVolume returned. */
public record VolumeRef(String volumeId, Map<String, String> context) {
  public VolumeRef {
    context = Map.copyOf(context);
  }
}
