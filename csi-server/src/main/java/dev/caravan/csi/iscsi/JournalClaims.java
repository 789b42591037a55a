package dev.caravan.csi.iscsi;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdShape;
import dev.caravan.csi.backend.qnap.QnapSessions;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.backend.VolumeLocks;
import dev.caravan.storage.iscsi.IscsiSession;
import dev.caravan.storage.iscsi.SessionClaims;
import java.util.Optional;
import java.util.function.Function;

/**
 * The node's claims on its iSCSI sessions: every volume in the node journal wants its target, and
 * a session may be logged out only while its volume's lock is held, the lock NodeStage and
 * NodeUnstage take. A stage writes its journal record before it logs in (the node engine's intent
 * first), so a stage either holds the lock or has its record in the journal: there is no moment at
 * which it has logged in and the sweeper could take the session for a leak.
 */
final class JournalClaims implements SessionClaims {
  private final NodeJournal journal;
  private final QnapSessions sessions;
  private final Function<String, IdShape> ids;
  private final VolumeLocks locks;

  /** @param ids the backend's reading of a volume id ({@code ControllerBackend::volumeId}), for its lock key */
  JournalClaims(NodeJournal journal, QnapSessions sessions, Function<String, IdShape> ids, VolumeLocks locks) {
    this.journal = journal;
    this.sessions = sessions;
    this.ids = ids;
    this.locks = locks;
  }

  @Override
  public boolean wants(IscsiSession session) {
    return journal.all().stream().anyMatch(v -> sessions.uses(session, v.volumeId(), v.context()));
  }

  /** The lock of the volume the session's target belongs to; empty while an operation holds it. */
  @Override
  public Optional<Hold> hold(IscsiSession session) {
    Optional<String> id = sessions.volumeId(session);
    if (id.isEmpty() || !(ids.apply(id.get()) instanceof IdShape.Ours ours)) {
      return Optional.empty(); // not a volume of ours: never held, so never logged out
    }
    try {
      VolumeLocks.Held held = locks.acquire(VolumeLocks.volume(ours.lockKey()));
      return Optional.of(held::close);
    } catch (CsiException e) {
      return Optional.empty(); // a stage, unstage or publish of that volume is under way
    }
  }
}
