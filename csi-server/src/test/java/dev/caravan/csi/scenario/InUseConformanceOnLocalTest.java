package dev.caravan.csi.scenario;

class InUseConformanceOnLocalTest extends InUseConformance {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }
}
