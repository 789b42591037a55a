package dev.caravan.csi.scenario.fuzz;

import dev.caravan.csi.scenario.TestBackend;

class RequestFuzzOnFileTest extends RequestFuzz {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }

  @Override
  int defaultTries() {
    return 200;
  }

  @Override
  boolean isolatePlugin() {
    return true;
  }
}
