package dev.caravan.csi.scenario;

class NodeConformanceOnLocalTest extends NodeConformance {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }
}
