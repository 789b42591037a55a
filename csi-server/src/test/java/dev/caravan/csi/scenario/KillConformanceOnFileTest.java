package dev.caravan.csi.scenario;

class KillConformanceOnFileTest extends KillConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }
}
