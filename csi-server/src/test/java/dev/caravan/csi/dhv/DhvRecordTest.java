package dev.caravan.csi.dhv;

import static dev.caravan.csi.testing.RecordText.withoutDate;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.RecordText;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A DHV volume's record as it stands on disk: the text below is what the plugin writes. */
class DhvRecordTest {
  private static final String RECORD = RecordText.of(
      "#caravan DHV volume",
      "#Fri Dec 04 21:40:40 UTC 2026",
      "backendVolumeId=dhv-0f8e",
      "capacityMax=2048",
      "capacityMin=1024",
      "createdAt=2026-01-02T03\\:04\\:05Z",
      "creation.backendExisted=false",
      "creation.call=call-7",
      "creation.made=true",
      "name=pg data",
      "namespace=default",
      "parameter.fs=xfs",
      "parameter.mode=ro\u00e9",
      "publishedOn=node-2",
      "volumeId=0f8e1c2a-1111-2222-3333-444455556666");

  @Test
  void aRecordReadsAndWritesAsOnDisk() {
    DhvRecord r = new DhvRecord("0f8e1c2a-1111-2222-3333-444455556666", "pg data", "default", 1024, 2048,
        Map.of("fs", "xfs", "mode", "ro\u00e9"), Optional.of("dhv-0f8e"), Optional.of("node-2"),
        Instant.parse("2026-01-02T03:04:05Z"),
        Optional.of(new DhvRecord.Creation("call-7", false, Optional.of(true))));

    assertThat(DhvRecord.decode(RECORD.getBytes(StandardCharsets.UTF_8))).isEqualTo(r);
    assertThat(withoutDate(r.encode())).isEqualTo(withoutDate(RECORD));
  }

  @Test
  void aRecordWithoutTheKeysAddedLaterReadsWithTheirDefaults() {
    String older = RecordText.of(
        "#caravan DHV volume",
        "#Fri Dec 04 21:40:40 UTC 2026",
        "createdAt=2026-01-02T03\\:04\\:05Z",
        "volumeId=0f8e1c2a-1111-2222-3333-444455556666");

    assertThat(DhvRecord.decode(older.getBytes(StandardCharsets.UTF_8))).isEqualTo(new DhvRecord(
        "0f8e1c2a-1111-2222-3333-444455556666", "", "", 0, 0, Map.of(), Optional.empty(), Optional.empty(),
        Instant.parse("2026-01-02T03:04:05Z"), Optional.empty()));
  }
}
