package dev.caravan.csi;

class InUseConformanceOnLocalTest extends InUseConformance {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }
}
