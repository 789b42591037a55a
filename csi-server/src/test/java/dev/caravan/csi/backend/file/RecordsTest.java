package dev.caravan.csi.backend.file;

import static dev.caravan.csi.testing.RecordText.withoutDate;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.ContentSource;
import dev.caravan.csi.backend.file.Records.SnapshotRecord;
import dev.caravan.csi.backend.file.Records.State;
import dev.caravan.csi.backend.file.Records.VolumeRecord;
import dev.caravan.csi.testing.RecordText;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The file backend's records as they stand on disk: the texts below are what the plugin writes. */
class RecordsTest {
  private static final String VOLUME = RecordText.of(
      "#caravan file backend record",
      "#Fri Dec 04 21:40:39 UTC 2026",
      "access=mount",
      "createdAt=2026-01-02T03\\:04\\:05Z",
      "encryption=on",
      "fsType=xfs",
      "id=vol-1",
      "kind=volume",
      "name=caf\u00e9 \\= \u4e2d\\: \\#1",
      "sizeBytes=1048576",
      "source.id=snap-1",
      "source.kind=SNAPSHOT",
      "state=READY");

  private static final String SNAPSHOT = RecordText.of(
      "#caravan file backend record",
      "#Fri Dec 04 21:40:39 UTC 2026",
      "createdAt=2026-01-02T03\\:04\\:05.123Z",
      "id=snap-1",
      "kind=snapshot",
      "name=nightly",
      "sizeBytes=4096",
      "sourceVolumeId=vol-1",
      "state=CREATING");

  @Test
  void aVolumeRecordReadsAndWritesAsOnDisk() {
    VolumeRecord v = new VolumeRecord("vol-1", "caf\u00e9 = \u4e2d: #1", State.READY, 1048576,
        Optional.of(new ContentSource(ContentSource.Kind.SNAPSHOT, "snap-1")), "xfs", "mount",
        Instant.parse("2026-01-02T03:04:05Z"), true);

    assertThat(VolumeRecord.decode(VOLUME.getBytes(StandardCharsets.UTF_8))).isEqualTo(v);
    assertThat(withoutDate(v.encode())).isEqualTo(withoutDate(VOLUME));
  }

  @Test
  void aVolumeRecordWithoutTheKeysAddedLaterReadsWithTheirDefaults() {
    String older = RecordText.of(
        "#caravan file backend record",
        "#Fri Dec 04 21:40:39 UTC 2026",
        "createdAt=2026-01-02T03\\:04\\:05Z",
        "id=vol-2",
        "kind=volume",
        "name=old",
        "sizeBytes=4096",
        "state=DELETING");

    assertThat(VolumeRecord.decode(older.getBytes(StandardCharsets.UTF_8))).isEqualTo(new VolumeRecord("vol-2",
        "old", State.DELETING, 4096, Optional.empty(), "ext4", "", Instant.parse("2026-01-02T03:04:05Z"), false));
  }

  @Test
  void aSnapshotRecordReadsAndWritesAsOnDisk() {
    SnapshotRecord s = new SnapshotRecord("snap-1", "nightly", State.CREATING, "vol-1", 4096,
        Instant.parse("2026-01-02T03:04:05.123Z"), false);

    assertThat(SnapshotRecord.decode(SNAPSHOT.getBytes(StandardCharsets.UTF_8))).isEqualTo(s);
    assertThat(withoutDate(s.encode())).isEqualTo(withoutDate(SNAPSHOT));
  }
}
