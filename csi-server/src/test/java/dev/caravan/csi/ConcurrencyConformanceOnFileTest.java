package dev.caravan.csi;

class ConcurrencyConformanceOnFileTest extends ConcurrencyConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }
}
