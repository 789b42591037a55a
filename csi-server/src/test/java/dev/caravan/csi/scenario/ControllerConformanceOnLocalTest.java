package dev.caravan.csi.scenario;

class ControllerConformanceOnLocalTest extends ControllerConformance {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }
}
