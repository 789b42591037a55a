package dev.caravan.csi.scenario;

class ControllerConformanceOnFileTest extends ControllerConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }
}
