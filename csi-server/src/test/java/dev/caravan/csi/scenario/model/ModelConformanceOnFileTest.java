package dev.caravan.csi.scenario.model;

import dev.caravan.csi.scenario.TestBackend;

/**
 * The model-based test on the file backend, with DHV operations and kills at crash points; with LUKS2
 * volumes (and the LUKS2 crash points) where dm-crypt is usable (the guest), none elsewhere.
 */
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
    ModelGenerator.Options e = encryptionOn(backend());
    return new ModelGenerator.Options(true, true, e.encryption(), e.whyNoEncryption());
  }
}
