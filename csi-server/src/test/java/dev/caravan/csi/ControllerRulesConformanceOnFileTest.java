package dev.caravan.csi;

/** {@link ControllerRulesConformance} on the file backend (sparse files on loop devices). */
class ControllerRulesConformanceOnFileTest extends ControllerRulesConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }
}
