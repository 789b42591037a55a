package dev.caravan.csi.dhv;

import java.util.Locale;

/**
 * How a DHV plugin binds volumes to nodes. IMMEDIATE is what Nomad runs today: {@code create} makes
 * the volume usable on the node that runs it. DEFERRED is Caravan's proposal for
 * hashicorp/nomad#27107: {@code create} only provisions, {@code publish} and {@code unpublish} bind
 * the volume to the node where an allocation runs (docs/dhv-deferred-binding.md).
 */
public enum Mode {
  IMMEDIATE,
  DEFERRED;

  /** {@code immediate} or {@code deferred}, as the wrapper passes it. */
  public static Mode parse(String s) {
    return switch (s) {
      case "immediate" -> IMMEDIATE;
      case "deferred" -> DEFERRED;
      default -> throw new IllegalArgumentException("mode must be immediate or deferred, not '" + s + "'");
    };
  }

  public String id() {
    return name().toLowerCase(Locale.ROOT);
  }
}
