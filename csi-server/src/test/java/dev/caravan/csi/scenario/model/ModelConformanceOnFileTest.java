package dev.caravan.csi.scenario.model;

import dev.caravan.csi.scenario.TestBackend;

/** The model-based test on the file backend, with DHV operations and kills at crash points. */
class ModelConformanceOnFileTest extends ModelConformance {
  @Override
  TestBackend backend() {
    return TestBackend.file();
  }

  @Override
  int steps() {
    return 400;
  }

  @Override
  ModelGenerator.Options options() {
    return new ModelGenerator.Options(true, true);
  }
}
