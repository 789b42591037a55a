package dev.caravan.csi.scenario.model;

import dev.caravan.csi.scenario.TestBackend;

/**
 * The model-based test on qnap: real LIO targets behind the simulator, open-iscsi and multipathd (the
 * guest; on the host it skips for want of them). A smaller budget, no kills and no DHV operations, for
 * the reason {@link ModelConformanceOnLocalTest} gives; no encrypted volumes (see {@link
 * ModelConformance#encryptionOn}).
 */
class ModelConformanceOnQnapTest extends ModelConformance {
  @Override
  TestBackend backend() {
    return TestBackend.qnapOnLio();
  }

  @Override
  int steps() {
    return 25;
  }

  @Override
  ModelGenerator.Options options() {
    return encryptionOn(backend());
  }
}
