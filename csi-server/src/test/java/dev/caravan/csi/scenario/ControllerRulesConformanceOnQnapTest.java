package dev.caravan.csi.scenario;

/** {@link ControllerRulesConformance} on the qnap backend, against the appliance simulator. */
class ControllerRulesConformanceOnQnapTest extends ControllerRulesConformance {
  @Override
  TestBackend backend() {
    return TestBackend.qnap();
  }
}
