package dev.caravan.csi.scenario;

/** {@link NodeRulesConformance} on the local backend: real ZFS zvols, in the guest of scripts/guest-suite. */
class NodeRulesConformanceOnLocalTest extends NodeRulesConformance {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }
}
