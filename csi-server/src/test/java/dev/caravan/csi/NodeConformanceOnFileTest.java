package dev.caravan.csi;

class NodeConformanceOnFileTest extends NodeConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }
}
