package dev.caravan.csi;

class ControllerConformanceOnLocalTest extends ControllerConformance {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }
}
