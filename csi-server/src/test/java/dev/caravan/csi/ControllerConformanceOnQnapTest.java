package dev.caravan.csi;

class ControllerConformanceOnQnapTest extends ControllerConformance {
  @Override
  TestBackend backend() {
    return TestBackend.qnap();
  }
}
