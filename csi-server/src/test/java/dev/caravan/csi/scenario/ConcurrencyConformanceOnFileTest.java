package dev.caravan.csi.scenario;

class ConcurrencyConformanceOnFileTest extends ConcurrencyConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }
}
