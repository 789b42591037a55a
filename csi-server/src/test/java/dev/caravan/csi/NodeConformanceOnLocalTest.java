package dev.caravan.csi;

class NodeConformanceOnLocalTest extends NodeConformance {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }
}
