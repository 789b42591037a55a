package dev.caravan.csi.backend.file;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.KeyCosts;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.storage.crypt.KeySlotCost;
import dev.caravan.storage.zfs.Pbkdf2Iters;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The key slot cost the backend is opened with is the one its node formats new LUKS2 volumes with. */
class FileBackendKeyCostTest {
  @Test
  void theNodeFormatsWithTheConfiguredKeySlotCostAndTheDefaultWithoutOne(@TempDir Path dir) {
    KeySlotCost cost = KeySlotCost.iterTime(Duration.ofMillis(7)).withMemoryKiB(1024);
    FileBackend configured = FileBackend.open(new BackendConfig("n1", dir, Map.of(), NodeUsage.none(),
        new KeyCosts(cost, Pbkdf2Iters.DEFAULT)));
    assertThat(((FileNode) configured.node()).keySlotCost()).isEqualTo(cost);
    FileBackend unset = FileBackend.open(new BackendConfig("n1", dir, Map.of(), NodeUsage.none()));
    assertThat(((FileNode) unset.node()).keySlotCost()).isEqualTo(KeySlotCost.DEFAULT);
  }
}
