package dev.caravan.csi.iscsi;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.node.StagedVolume;
import dev.caravan.csi.observe.metrics.PrometheusMetrics;
import dev.caravan.storage.iscsi.IscsiSession;
import dev.caravan.storage.iscsi.Portal;
import dev.caravan.storage.iscsi.SessionClaims;
import dev.caravan.storage.iscsi.SweepOutcome;
import dev.caravan.storage.iscsi.SweepOutcome.Action;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The scheduling side: when it sweeps, and what it counts. The sweep itself (real sessions) is
 * host-storage's SessionSweeper, tested in the guest (SessionSweeperGuestTest); here a stand-in
 * answers what such a sweep returns.
 */
class IscsiSweeperServiceTest {
  private static final IscsiSession S1 = session(1);
  private static final IscsiSession S2 = session(2);
  private static final IscsiSession S3 = session(3);

  @TempDir Path dir;

  private final PrometheusMetrics metrics = new PrometheusMetrics();
  private final List<Predicate<IscsiSession>> scopes = new ArrayList<>();
  private final Predicate<IscsiSession> scope = Objects::nonNull;
  private final SessionClaims claims = IscsiSweeperServiceTest::wantsNone;

  private static boolean wantsNone(IscsiSession session) {
    return false;
  }

  private static IscsiSession session(int sid) {
    return new IscsiSession(sid, "iqn.2004-04.com.qnap:ts-873a:iscsi.cve-v" + sid + "-0123456789ab.1",
        Portal.parse("192.0.2.10"), 1, "default");
  }

  private IscsiSweeperService service(NodeJournal journal, List<SweepOutcome> answer) {
    return new IscsiSweeperService((sc, cl) -> {
      scopes.add(sc);
      return answer;
    }, scope, claims, journal, Optional.of(metrics.registry()));
  }

  private String scrape() throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    metrics.write(out);
    return out.toString(StandardCharsets.UTF_8);
  }

  @Test
  void aPluginThatHasStagedNothingDoesNotSweep() throws IOException {
    NodeJournal journal = NodeJournal.open(dir);
    IscsiSweeperService service = service(journal, List.of(new SweepOutcome(S1, Action.LOGGED_OUT, "")));
    assertThat(service.sweepOnce()).isEmpty();
    assertThat(scopes).isEmpty();
    assertThat(scrape()).contains("caravan_iscsi_sweeps_total{outcome=\"idle\"} 1");

    // Once it has staged, it sweeps, and keeps sweeping after the last volume is unstaged.
    journal.put(new StagedVolume("qnap/v1/cve-v9-0123456789ab", Map.of(), AccessType.MOUNT, "ext4", Optional.empty(),
        List.of(), List.of()));
    assertThat(service.sweepOnce()).hasSize(1);
    journal.remove("qnap/v1/cve-v9-0123456789ab");
    assertThat(service.sweepOnce()).hasSize(1);
    assertThat(scopes).containsExactly(scope, scope);
  }

  @Test
  void logoutsAndFailuresAreCountedAndWaitingSessionsShown() throws IOException {
    NodeJournal journal = NodeJournal.open(dir);
    journal.put(new StagedVolume("qnap/v1/cve-v9-0123456789ab", Map.of(), AccessType.MOUNT, "ext4", Optional.empty(),
        List.of(), List.of()));
    IscsiSweeperService service = service(journal, List.of(
        new SweepOutcome(S1, Action.LOGGED_OUT, "unused for 300 s"),
        new SweepOutcome(S2, Action.FAILED, "multipathd refused"),
        new SweepOutcome(S3, Action.UNUSED_WAITING, "first seen unused"),
        new SweepOutcome(session(4), Action.KEPT_IN_USE, "sdb mounted at /mnt")));
    service.sweepOnce();
    service.sweepOnce();
    String text = scrape();
    assertThat(text)
        .contains("caravan_iscsi_sessions_swept_total{outcome=\"logged_out\"} 2")
        .contains("caravan_iscsi_sessions_swept_total{outcome=\"failed\"} 2")
        .contains("caravan_iscsi_sweeps_total{outcome=\"ok\"} 2")
        .contains("caravan_iscsi_sessions_unused 1");
  }
}
