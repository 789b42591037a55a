package dev.caravan.csi.scenario;

/**
 * {@link ControllerRulesConformance} on qnap with real LIO targets behind the simulator (the guest): the
 * rules that need a staged volume, which the simulator alone cannot give ({@link ControllerRulesConformanceOnQnapTest}).
 */
class ControllerRulesConformanceOnQnapLioTest extends ControllerRulesConformance {
  @Override
  TestBackend backend() {
    return TestBackend.qnapOnLio();
  }

  /**
   * Each round makes and removes a LUN and a target on LIO: four keep the guest's time in bounds; the
   * simulator's run on the host (ControllerRulesConformanceOnQnapTest) races the full count.
   */
  @Override
  int raceRounds() {
    return 4;
  }
}
