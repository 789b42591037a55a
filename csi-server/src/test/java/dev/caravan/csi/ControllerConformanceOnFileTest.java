package dev.caravan.csi;

class ControllerConformanceOnFileTest extends ControllerConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }
}
