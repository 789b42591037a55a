package dev.caravan.csi;

class ConcurrencyConformanceOnLocalTest extends ConcurrencyConformance {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }
}
