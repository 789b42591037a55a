package dev.caravan.csi.backend;

/** A backend's own readiness check (Probe). */
public record Readiness(boolean ready, String detail) {
  public static Readiness ready(String detail) {
    return new Readiness(true, detail);
  }

  public static Readiness notReady(String detail) {
    return new Readiness(false, detail);
  }
}
