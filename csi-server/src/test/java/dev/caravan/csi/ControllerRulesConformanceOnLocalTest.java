package dev.caravan.csi;

/** {@link ControllerRulesConformance} on the local backend (ZFS zvols; runs in the guest). */
class ControllerRulesConformanceOnLocalTest extends ControllerRulesConformance {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }
}
