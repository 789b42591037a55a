package dev.caravan.csi.backend;

import java.util.Optional;

/**
 * CSI's VolumeCondition in domain terms: abnormal plus a plain-words reason.
 *
 * @param next for a condition of the storage itself (a pool whose I/O is suspended, a multipath map
 *     with no path up), which none of the node's own layers shows, the command an operator runs next
 *     to see it; the claim-chain inspector makes it a finding. Empty for a condition that the other
 *     layers already show (a missing backing object, a detached device) and when the volume is well.
 */
public record VolumeHealth(boolean abnormal, String message, Optional<String> next) {
  public static final VolumeHealth OK = new VolumeHealth(false, "ok", Optional.empty());

  public VolumeHealth(boolean abnormal, String message) {
    this(abnormal, message, Optional.empty());
  }

  public static VolumeHealth abnormal(String message) {
    return new VolumeHealth(true, message, Optional.empty());
  }

  /** A condition of the storage under the volume, with the command that shows it. */
  public static VolumeHealth ofStorage(String message, String next) {
    return new VolumeHealth(true, message, Optional.of(next));
  }
}
