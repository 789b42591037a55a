package dev.caravan.csi.backend;

import java.util.Map;

/**
 * What the node side knows about a volume: its id, the context CreateVolume returned, and the
 * secrets of the NodeStage request that attaches it (e.g. a LUN's CHAP credentials). Secrets are
 * never journaled or printed: {@link #toString()} names only their keys, and a VolumeRef rebuilt
 * from the journal (for a detach) has none.
 */
public record VolumeRef(String volumeId, Map<String, String> context, Map<String, String> secrets) {
  public VolumeRef {
    context = Map.copyOf(context);
    secrets = Map.copyOf(secrets);
  }

  /** A reference without secrets. */
  public VolumeRef(String volumeId, Map<String, String> context) {
    this(volumeId, context, Map.of());
  }

  @Override
  public String toString() {
    return "VolumeRef[volumeId=" + volumeId + ", context=" + context + ", secrets=" + secrets.keySet() + "]";
  }
}
