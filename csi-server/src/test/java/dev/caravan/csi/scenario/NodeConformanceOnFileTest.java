package dev.caravan.csi.scenario;

class NodeConformanceOnFileTest extends NodeConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }
}
