package dev.caravan.csi.scenario.model;

import dev.caravan.csi.scenario.TestBackend;

/**
 * The model-based test on the local backend (real OpenZFS zvols, some with native encryption, in the
 * guest): a smaller budget, and neither kills nor DHV operations, each of which starts a JVM (minutes
 * under TCG); the crash points are cased one by one in {@code KillConformanceOnLocalTest}, and the
 * shared node code is killed at every step by the file backend's model run.
 */
class ModelConformanceOnLocalTest extends ModelConformance {
  @Override
  TestBackend backend() {
    return TestBackend.local();
  }

  @Override
  int steps() {
    return 40;
  }

  @Override
  ModelGenerator.Options options() {
    return encryptionOn(backend());
  }
}
