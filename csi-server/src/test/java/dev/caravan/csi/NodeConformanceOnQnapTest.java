package dev.caravan.csi;

/** The node suite on qnap: real LIO targets behind the simulator, open-iscsi and multipathd (the guest). */
class NodeConformanceOnQnapTest extends NodeConformance {
  @Override
  TestBackend backend() {
    return TestBackend.qnapOnLio();
  }
}
