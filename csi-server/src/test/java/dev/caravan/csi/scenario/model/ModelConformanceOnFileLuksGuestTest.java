package dev.caravan.csi.scenario.model;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.csi.scenario.TestBackend;
import dev.caravan.storage.testing.HostRequirements;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;

/**
 * The model-based test on the file backend with LUKS2 volumes, in the guest (dm-crypt): the run of
 * {@link ModelConformanceOnFileTest} on the host draws no encrypted volume, having no dm-crypt. A
 * smaller budget and neither kills nor DHV operations, each of which starts a JVM (minutes under TCG);
 * the LUKS2 crash points are cased one by one in {@code KillConformanceOnFileLuksGuestTest}.
 */
class ModelConformanceOnFileLuksGuestTest extends ModelConformance {
  @BeforeEach
  void needsDmCrypt() {
    Optional<String> why = HostRequirements.whyNoDmCrypt();
    assumeTrue(why.isEmpty(), () -> "the LUKS2 model run needs dm-crypt (it runs in the guest): " + why.orElse(""));
  }

  @Override
  TestBackend backend() {
    return TestBackend.file();
  }

  @Override
  int steps() {
    return 60;
  }

  @Override
  ModelGenerator.Options options() {
    return encryptionOn(backend());
  }
}
