package dev.caravan.csi;

import java.util.List;
import java.util.stream.Stream;

/**
 * Kill at every step on qnap: real LIO targets behind the simulator, open-iscsi and multipathd (the
 * guest). A JVM takes 10-25 s to start there and an iSCSI login more, so this runs qnap's own steps
 * and the two shared ones where iSCSI state is half made or half gone, each the first way listed: a
 * stage killed with the map built but nothing formatted, and an unstage killed once the detach had
 * logged out, whose retry detaches nothing. The other shared steps are the same code on every
 * backend, proven every way on file.
 */
class KillConformanceOnQnapTest extends KillConformance {
  private static final List<String> SHARED = List.of("stage.after-attach", "unstage.after-detach");

  @Override
  TestBackend backend() {
    return TestBackend.qnapOnLio();
  }

  @Override
  Stream<Case> cases() {
    TestBackend backend = backend();
    return Stream.concat(
        SHARED.stream().map(step -> MATRIX.stream().filter(c -> c.step().equals(step)).findFirst().orElseThrow()),
        MATRIX.stream().filter(c -> c.where() == Where.QNAP && c.where().reachedBy(backend)));
  }
}
