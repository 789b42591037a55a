package dev.caravan.csi;

/** {@link FailoverConformance} on the file backend (sparse files on loop devices). */
class FailoverConformanceOnFileTest extends FailoverConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }
}
