package dev.caravan.csi.backend.qnap;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.IdShape;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class QnapIdsTest {
  @Test
  void anIdAndTheNameItCameFromShareOneLockKey() {
    for (String name : new String[] {"db", "pvc-0b5e6f7a-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "Ünïcödé name/../x", "x".repeat(128)}) {
      for (String fs : new String[] {"ext4", "xfs"}) {
        for (boolean encrypted : new boolean[] {false, true}) {
          QnapIds.VolumeId v = QnapIds.volumeFor(name, fs, java.util.Set.of(dev.caravan.csi.backend.AccessType.values()),
              encrypted);
          assertThat(QnapIds.volumeShape(v.id())).isEqualTo(new IdShape.Ours(QnapIds.volumeLockKey(name)));
          assertThat(QnapIds.volume(v.id())).map(QnapIds.VolumeId::fsType).contains(fs);
          assertThat(QnapIds.volume(v.id())).as("encryption read back from the id").contains(v)
              .map(QnapIds.VolumeId::encrypted).contains(encrypted);
          QnapIds.SnapshotId s = QnapIds.snapshotFor(v, name + "-snap");
          assertThat(QnapIds.snapshotShape(s.id())).isEqualTo(new IdShape.Ours(QnapIds.snapshotLockKey(name + "-snap")));
          assertThat(s.id().getBytes(StandardCharsets.UTF_8).length).isLessThanOrEqualTo(IdRules.MAX_BYTES);
          assertThat(v.lunName()).hasSizeLessThanOrEqualTo(64).matches("[a-z0-9-]+");
        }
      }
    }
  }

  @Test
  void theEncryptionLetterFollowsTheAccessLetterAndOlderNamesArePlain() {
    assertThat(QnapIds.volume("qnap/v1/cvem-db-0123456789ab")).map(QnapIds.VolumeId::encrypted).contains(false);
    assertThat(QnapIds.volume("qnap/v1/cveml-db-0123456789ab")).map(QnapIds.VolumeId::encrypted).contains(true);
    assertThat(QnapIds.volume("qnap/v1/cvxl-0123456789ab")).hasValueSatisfying(v -> {
      assertThat(v.encrypted()).isTrue();
      assertThat(v.fsType()).isEqualTo("xfs");
      assertThat(v.hash()).isEqualTo("0123456789ab");
    });
    assertThat(QnapIds.volume("qnap/v1/cvelm-db-0123456789ab")).as("l after the access letter only").isEmpty();
  }

  @Test
  void idsOfOtherFormsAreNotOurs() {
    for (String id : new String[] {"../etc/passwd", "qnap/v1/", "qnap/v1/cve-db", "qnap/v1/cvz-db-0123456789ab",
        "qnap/v1/cve-db-0123456789ab/../x", "local/v1/n/pool/caravan/vol-x-0123456789ab"}) {
      assertThat(QnapIds.volumeShape(id)).as(id).isInstanceOf(IdShape.NotOurs.class);
      assertThat(QnapIds.snapshotShape(id + "@cs-s-0123456789ab")).as(id).isInstanceOf(IdShape.NotOurs.class);
    }
    assertThat(QnapIds.snapshotShape("qnap/v1/cve-db-0123456789ab@snap")).isInstanceOf(IdShape.NotOurs.class);
  }

  @Test
  void nodeIdsAreInitiatorNames() {
    assertThat(QnapIds.isInitiator("iqn.1993-08.org.debian:01:2f3a4b5c6d7e")).isTrue();
    assertThat(QnapIds.isInitiator("iqn.2004-04.com.qnap")).isTrue();
    assertThat(QnapIds.isInitiator("eui.02004567A425678D")).isTrue();
    assertThat(QnapIds.isInitiator("node-1")).isFalse();
    assertThat(QnapIds.isInitiator("iqn.1993-08.org.debian:01:with space")).isFalse();
  }
}
