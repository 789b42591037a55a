package dev.caravan.csi.scenario;

class ControllerConformanceOnQnapTest extends ControllerConformance {
  @Override
  TestBackend backend() {
    return TestBackend.qnap();
  }
}
