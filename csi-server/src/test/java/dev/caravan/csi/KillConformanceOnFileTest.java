package dev.caravan.csi;

class KillConformanceOnFileTest extends KillConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }
}
