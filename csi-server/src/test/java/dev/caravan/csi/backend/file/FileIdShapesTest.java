package dev.caravan.csi.backend.file;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.IdShape;
import dev.caravan.csi.backend.NodeUsage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** How the file backend reads ids: exactly the ids it derives from names are its own. */
class FileIdShapesTest {
  private final Path dir;
  private final FileController controller;

  FileIdShapesTest() throws IOException {
    dir = Files.createTempDirectory("caravan-file-ids-");
    controller = new FileController(new FileStore(dir), "n1", NodeUsage.none());
  }

  @AfterEach
  void clean() throws IOException {
    for (String sub : List.of("volumes", "snapshots", "")) {
      Files.deleteIfExists(dir.resolve(sub));
    }
  }

  @Test
  void issuedIdsAreOursAndLockedLikeTheirName() {
    for (String name : List.of("mysql-data", "x".repeat(128), "ümlaut ☃", "-", "A B/C..D", "pvc-0f3a9c7e-1b2d")) {
      String volume = FileIds.volumeId(name);
      assertThat(controller.volumeId(volume)).as(volume).isEqualTo(new IdShape.Ours(controller.volumeLockKey(name)));
      String snapshot = FileIds.snapshotId(name);
      assertThat(controller.snapshotId(snapshot)).as(snapshot)
          .isEqualTo(new IdShape.Ours(controller.snapshotLockKey(name)));
      assertThat(controller.volumeId(snapshot)).isInstanceOf(IdShape.NotOurs.class);
      assertThat(controller.snapshotId(volume)).isInstanceOf(IdShape.NotOurs.class);
    }
  }

  @Test
  void everyOtherIdIsNeverIssued() {
    for (String id : List.of("vol-abc", "vol-never-existed", "../etc/passwd", "a/b", "Vol.1", ".", "vol-0123456789AB",
        "vol-x-0123456789ab/..", "vol--0123456789ab", "vol-x-0123456789ab\n", "local/v1/n1/tank/caravan/vol-a")) {
      assertThat(controller.volumeId(id)).as(id).isInstanceOfSatisfying(IdShape.NotOurs.class,
          n -> assertThat(n.rule()).contains("vol-<name slug>-<12 hex digits>"));
    }
    assertThat(controller.volumeId("vol-x-0123456789ab")).isInstanceOf(IdShape.Ours.class);
  }
}
