package dev.caravan.csi.drivers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.NodeUsage;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Only backends that exist are offered: no driver name stands for work not done yet. */
class BackendsTest {
  @Test
  void onlyImplementedDriversAreKnown() {
    assertThat(Backends.DRIVERS).containsExactly("file", "local", "qnap");
    assertThatThrownBy(() -> Backends.open("nfs", new BackendConfig("n1", Path.of("/nonexistent"), Map.of(), NodeUsage.none())))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("unknown driver 'nfs'; known drivers: file, local, qnap");
    assertThatThrownBy(() -> Backends.open("qnap", new BackendConfig("n1", Path.of("/nonexistent"), Map.of(), NodeUsage.none())))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("qnap.portals");
  }
}
