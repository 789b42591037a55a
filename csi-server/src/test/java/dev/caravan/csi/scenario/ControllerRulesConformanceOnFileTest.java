package dev.caravan.csi.scenario;

/** {@link ControllerRulesConformance} on the file backend (sparse files on loop devices). */
class ControllerRulesConformanceOnFileTest extends ControllerRulesConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }
}
