package dev.caravan.csi.scenario;

import java.util.List;
import java.util.stream.Stream;

/**
 * Kill at every step on qnap: real LIO targets behind the simulator, open-iscsi and multipathd (the
 * guest). A JVM takes 10-25 s to start there and a case one to one and a half minutes, so this runs
 * qnap's own steps (a stage killed with sessions logged in and no map yet, an unstage killed with the
 * map flushed and the sessions still there; on an encrypted volume, a stage killed with LUKS2 written
 * on the map and no mapping open, an unstage killed with the mapping closed and the map still there, a
 * rotating stage killed with the new passphrase's key slot added and the previous one's still there)
 * and one shared step: an unstage killed once the detach had
 * logged out and deleted the node records, whose retry detaches nothing. The other shared steps are the
 * same code on every backend, proven every way on file; stage.after-attach (a retry that finds the map
 * built) passed here too, but costs another forked plugin and login for what qnap.attach.after-login
 * mostly covers.
 */
class KillConformanceOnQnapTest extends KillConformance {
  private static final List<String> SHARED = List.of("unstage.after-detach");

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
