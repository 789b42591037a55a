package dev.caravan.csi.scenario;

class KillConformanceOnLocalTest extends KillConformance {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }

  /**
   * A JVM takes 10-25 s to start in the guest (TCG), and a case about 90 s in all: the zvol steps
   * only, one forked plugin each. The node engine's steps are the same code on file, run there.
   */
  @Override
  boolean sharedStepsEveryWay() {
    return false;
  }
}
