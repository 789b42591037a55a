package dev.caravan.csi.support;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The version the plugin reports comes from the build, not the "unknown" it falls back to. */
class BuildInfoTest {
  @Test
  void versionIsTheBuildsVersion() {
    assertThat(BuildInfo.version()).matches("\\d+\\.\\d+\\.\\d+.*");
  }
}
