package dev.caravan.storage.iscsi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.iscsi.SweepDecisions.Plan;
import dev.caravan.storage.iscsi.SweepDecisions.SessionKey;
import dev.caravan.storage.iscsi.SweepDecisions.Seen;
import dev.caravan.storage.iscsi.SweepDecisions.Verdict;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class SweepDecisionsTest {
  private static final Duration GRACE = Duration.ofMinutes(2);
  private static final long S = 1_000_000_000L;
  private static final Portal P1 = Portal.parse("192.0.2.10");
  private static final Portal P2 = Portal.parse("192.0.2.11");
  private static final String T = "iqn.2004-04.com.qnap:ts-873a:iscsi.cve-db-3f2a9c0b1d4e.1a2b3c";
  private static final IscsiSession SESSION = new IscsiSession(7, T, P1, 1, "default");

  private static Seen unused(IscsiSession s) {
    return new Seen(s, true, false, List.of());
  }

  private static Verdict only(Plan plan) {
    assertThat(plan.decisions()).hasSize(1);
    return plan.decisions().getFirst().verdict();
  }

  @Test
  void anUnusedSessionIsLoggedOutOnlyBySecondSweepAGracePeriodAfterTheFirst() {
    Plan first = SweepDecisions.decide(Map.of(), List.of(unused(SESSION)), 1000 * S, GRACE);
    assertThat(only(first)).isEqualTo(Verdict.UNUSED_WAITING);
    assertThat(first.unusedSince()).containsEntry(SessionKey.of(SESSION), 1000 * S);

    Plan early = SweepDecisions.decide(first.unusedSince(), List.of(unused(SESSION)), 1119 * S, GRACE);
    assertThat(only(early)).isEqualTo(Verdict.UNUSED_WAITING);
    assertThat(early.unusedSince()).containsEntry(SessionKey.of(SESSION), 1000 * S);

    Plan due = SweepDecisions.decide(early.unusedSince(), List.of(unused(SESSION)), 1120 * S, GRACE);
    assertThat(only(due)).isEqualTo(Verdict.LOG_OUT);
    assertThat(due.decisions().getFirst().detail()).contains("unused for 120 s");
  }

  @Test
  void oneSweepNeverLogsOutHoweverLongTheClockSays() {
    Plan plan = SweepDecisions.decide(Map.of(), List.of(unused(SESSION)), Long.MAX_VALUE, GRACE);
    assertThat(only(plan)).isEqualTo(Verdict.UNUSED_WAITING);
  }

  @Test
  void aSessionOutOfScopeIsNeverACandidate() {
    Seen outside = new Seen(SESSION, false, false, List.of());
    Plan first = SweepDecisions.decide(Map.of(), List.of(outside), 0, GRACE);
    Plan later = SweepDecisions.decide(first.unusedSince(), List.of(outside), 10_000 * S, GRACE);
    assertThat(only(first)).isEqualTo(Verdict.OUT_OF_SCOPE);
    assertThat(only(later)).isEqualTo(Verdict.OUT_OF_SCOPE);
    assertThat(later.unusedSince()).isEmpty();
  }

  @Test
  void wantedOrInUseInBetweenStartsTheClockAgain() {
    Plan first = SweepDecisions.decide(Map.of(), List.of(unused(SESSION)), 0, GRACE);
    Plan wanted = SweepDecisions.decide(first.unusedSince(), List.of(new Seen(SESSION, true, true, List.of())), 60 * S,
        GRACE);
    assertThat(only(wanted)).isEqualTo(Verdict.WANTED);
    assertThat(wanted.unusedSince()).isEmpty();
    Plan again = SweepDecisions.decide(wanted.unusedSince(), List.of(unused(SESSION)), 200 * S, GRACE);
    assertThat(only(again)).isEqualTo(Verdict.UNUSED_WAITING);

    Plan mounted = SweepDecisions.decide(again.unusedSince(),
        List.of(new Seen(SESSION, true, false, List.of("sdb mounted at /mnt"))), 400 * S, GRACE);
    assertThat(only(mounted)).isEqualTo(Verdict.IN_USE);
    assertThat(mounted.decisions().getFirst().detail()).isEqualTo("sdb mounted at /mnt");
    assertThat(mounted.unusedSince()).isEmpty();
    assertThat(only(SweepDecisions.decide(mounted.unusedSince(), List.of(unused(SESSION)), 600 * S, GRACE)))
        .isEqualTo(Verdict.UNUSED_WAITING);
  }

  @Test
  void aNewSessionToTheSameTargetAndPortalIsAnotherSession() {
    Plan first = SweepDecisions.decide(Map.of(), List.of(unused(SESSION)), 0, GRACE);
    IscsiSession relogged = new IscsiSession(8, T, P1, 1, "default");
    Plan second = SweepDecisions.decide(first.unusedSince(), List.of(unused(relogged)), 500 * S, GRACE);
    assertThat(only(second)).isEqualTo(Verdict.UNUSED_WAITING);
    assertThat(second.unusedSince()).containsOnlyKeys(SessionKey.of(relogged));

    // The same number to another portal (it cannot happen in one boot, but identity is all three).
    IscsiSession elsewhere = new IscsiSession(8, T, P2, 1, "default");
    assertThat(only(SweepDecisions.decide(second.unusedSince(), List.of(unused(elsewhere)), 1000 * S, GRACE)))
        .isEqualTo(Verdict.UNUSED_WAITING);
  }

  @Test
  void aSessionThatIsGoneIsForgotten() {
    Plan first = SweepDecisions.decide(Map.of(), List.of(unused(SESSION)), 0, GRACE);
    Plan gone = SweepDecisions.decide(first.unusedSince(), List.of(), 60 * S, GRACE);
    assertThat(gone.decisions()).isEmpty();
    assertThat(gone.unusedSince()).isEmpty();
  }

  @Test
  void eachSessionIsDecidedOnItsOwn() {
    IscsiSession other = new IscsiSession(9, "iqn.2003-01.org.example:root-disk", P2, 1, "default");
    IscsiSession used = new IscsiSession(10, T, P2, 1, "default");
    List<Seen> seen = List.of(unused(SESSION), new Seen(other, false, false, List.of()),
        new Seen(used, true, false, List.of("sdc held by dm-4")));
    Plan first = SweepDecisions.decide(Map.of(), seen, 0, GRACE);
    Plan second = SweepDecisions.decide(first.unusedSince(), seen, 120 * S, GRACE);
    assertThat(second.decisions()).extracting(d -> d.session().sid(), d -> d.verdict())
        .containsExactly(
            org.assertj.core.groups.Tuple.tuple(7, Verdict.LOG_OUT),
            org.assertj.core.groups.Tuple.tuple(9, Verdict.OUT_OF_SCOPE),
            org.assertj.core.groups.Tuple.tuple(10, Verdict.IN_USE));
  }

  @Test
  void theGraceMustBePositive() {
    assertThatThrownBy(() -> SweepDecisions.decide(Map.of(), List.of(), 0, Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
