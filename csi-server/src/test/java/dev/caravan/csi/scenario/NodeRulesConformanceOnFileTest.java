package dev.caravan.csi.scenario;

/** {@link NodeRulesConformance} on the file backend: sparse files on loop devices, on this host. */
class NodeRulesConformanceOnFileTest extends NodeRulesConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }
}
