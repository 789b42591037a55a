package dev.caravan.csi;

class ConcurrencyConformanceOnLocalTest extends ConcurrencyConformance {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }

  /** The guest has two emulated CPUs: three volumes already run their cycles side by side. */
  @Override
  int parallelVolumes() {
    return 3;
  }
}
