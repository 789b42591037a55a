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

  /**
   * Ten, not fifty: a round costs seconds on ZFS under the emulated CPU, and
   * ControllerRulesConformanceOnLocalTest races the same two calls twenty more times.
   */
  @Override
  int raceRounds() {
    return 10;
  }
}
