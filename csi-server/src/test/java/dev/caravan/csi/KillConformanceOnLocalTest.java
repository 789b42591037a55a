package dev.caravan.csi;

class KillConformanceOnLocalTest extends KillConformance {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }

  /** A JVM takes 10-25 s to start in the guest (TCG): one forked plugin per step. */
  @Override
  boolean everyWay() {
    return false;
  }
}
