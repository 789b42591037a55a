package dev.caravan.csi.iscsi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdShape;
import dev.caravan.csi.backend.qnap.QnapSessions;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.node.StagedVolume;
import dev.caravan.csi.backend.VolumeLocks;
import dev.caravan.storage.iscsi.IscsiSession;
import dev.caravan.storage.iscsi.Portal;
import dev.caravan.storage.iscsi.SessionClaims;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class JournalClaimsTest {
  private static final String LUN = "cve-db-3f2a9c0b1d4e";
  private static final String ID = "qnap/v1/" + LUN;
  private static final IscsiSession SESSION = new IscsiSession(4,
      "iqn.2004-04.com.qnap:ts-873a:iscsi." + LUN + ".1a2b3c", Portal.parse("192.0.2.10"), 1, "default");
  private static final QnapSessions SESSIONS =
      QnapSessions.of(Map.of("url", "https://nas.example", "portals", "192.0.2.10"));
  // The services lock a volume under the key the backend reads from its id; any such mapping will do here.
  private static final String KEY = VolumeLocks.volume("key-of-" + ID);

  @TempDir Path dir;

  private final VolumeLocks locks = new VolumeLocks();

  private JournalClaims claims(NodeJournal journal) {
    return new JournalClaims(journal, SESSIONS, id -> new IdShape.Ours("key-of-" + id), locks);
  }

  private static StagedVolume record(String id, Map<String, String> context) {
    return new StagedVolume(id, context, AccessType.MOUNT, "ext4", Optional.empty(), List.of(), List.of());
  }

  @Test
  void aVolumeInTheJournalWantsItsTarget() {
    NodeJournal journal = NodeJournal.open(dir);
    JournalClaims claims = claims(journal);
    assertThat(claims.wants(SESSION)).isFalse();

    journal.put(record("qnap/v1/cve-other-0123456789ab", Map.of("targetIqn", "iqn.2004-04.com.qnap:x:iscsi.y.z")));
    assertThat(claims.wants(SESSION)).isFalse();
    journal.put(record(ID, Map.of("targetIqn", SESSION.target(), "portals", "192.0.2.10:3260", "lun", "0")));
    assertThat(claims.wants(SESSION)).isTrue();
    journal.remove(ID);
    assertThat(claims.wants(SESSION)).isFalse();
  }

  @Test
  void theHoldIsTheVolumesLockAndIsRefusedWhileAStageHoldsIt() {
    JournalClaims claims = claims(NodeJournal.open(dir));
    try (VolumeLocks.Held stage = locks.acquire(KEY)) {
      assertThat(claims.hold(SESSION)).isEmpty();
    }
    Optional<SessionClaims.Hold> hold = claims.hold(SESSION);
    assertThat(hold).isPresent();
    assertThatThrownBy(() -> locks.acquire(KEY)).isInstanceOf(CsiException.class)
        .hasMessageContaining("already pending");
    hold.get().close();
    assertThat(locks.isHeld(KEY)).isFalse();
  }

  @Test
  void aSessionOfNoVolumeOfOursIsNeverHeld() {
    JournalClaims claims = new JournalClaims(NodeJournal.open(dir), SESSIONS, id -> new IdShape.NotOurs("rule"), locks);
    assertThat(claims.hold(SESSION)).isEmpty();
    IscsiSession foreign = new IscsiSession(5, "iqn.2003-01.org.example:disk", Portal.parse("192.0.2.10"), 1, "default");
    assertThat(claims(NodeJournal.open(dir)).hold(foreign)).isEmpty();
  }
}
