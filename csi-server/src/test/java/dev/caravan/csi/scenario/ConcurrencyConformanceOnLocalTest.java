package dev.caravan.csi.scenario;

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
   * Five, not fifty: a round costs seconds on ZFS under the emulated CPU, ControllerRulesConformanceOnLocalTest
   * races the same two calls twenty more times, and the guest suite has CI's 45 minutes to share.
   */
  @Override
  int raceRounds() {
    return 5;
  }
}
