package dev.caravan.csi;

class InUseConformanceOnFileTest extends InUseConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }
}
