package dev.caravan.csi.observe.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.backend.file.FileBackend;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class MeteredControllerBackendTest {
  @TempDir Path dir;

  /**
   * With metrics on, the services hold the metered wrapper, not the backend: every question about an
   * id must get the backend's own answer through it, the node an id names among them (node-scoped
   * file ids name theirs).
   */
  @Test
  void answersEveryIdQuestionAsTheBackendItMeters() {
    try (FileBackend backend = FileBackend.open(
        new BackendConfig("n1", dir, Map.of(FileBackend.NODE_SCOPED_IDS, "true"), NodeUsage.none()))) {
      ControllerBackend plain = backend.controller();
      ControllerBackend metered = new MeteredControllerBackend(plain, Metrics.NONE, "file");
      String volume = plain.volumeLockKey("data");
      String snapshot = plain.snapshotLockKey("nightly");
      assertThat(plain.volumeOwner(volume)).contains("n1");
      assertThat(plain.snapshotOwner(snapshot)).contains("n1");

      for (String id : List.of(volume, snapshot, "vol-x-0123456789ab", "../etc/passwd")) {
        assertThat(metered.volumeId(id)).as(id).isEqualTo(plain.volumeId(id));
        assertThat(metered.snapshotId(id)).as(id).isEqualTo(plain.snapshotId(id));
        assertThat(metered.volumeOwner(id)).as(id).isEqualTo(plain.volumeOwner(id));
        assertThat(metered.snapshotOwner(id)).as(id).isEqualTo(plain.snapshotOwner(id));
      }
      assertThat(metered.volumeLockKey("data")).isEqualTo(volume);
      assertThat(metered.snapshotLockKey("nightly")).isEqualTo(snapshot);
    }
  }
}
