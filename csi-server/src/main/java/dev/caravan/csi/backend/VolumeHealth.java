package dev.caravan.csi.backend;

/** CSI's VolumeCondition in domain terms: abnormal plus a plain-words reason. */
public record VolumeHealth(boolean abnormal, String message) {
  public static final VolumeHealth OK = new VolumeHealth(false, "ok");

  public static VolumeHealth abnormal(String message) {
    return new VolumeHealth(true, message);
  }
}
