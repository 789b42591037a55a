package dev.caravan.csi.peer;

import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.Replication;
import dev.caravan.csi.backend.ReplicationSettings;
import dev.caravan.csi.observe.inspect.Replicas;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The inspector's view of a volume's replicas on this node, through the backend's {@link Replication}
 * (the same for every backend): as the owner, the settings recorded on the volume and what the
 * scheduler's rounds since the plugin started learned of each replica node; as a replica node, the
 * copy it holds. Only reads; a resume token is never shown, only that a receive waits.
 */
final class ReplicaView implements Replicas {
  private final ControllerBackend backend;
  private final String self;
  private final Optional<ReplicationScheduler> scheduler;

  ReplicaView(ControllerBackend backend, String self, Optional<ReplicationScheduler> scheduler) {
    this.backend = backend;
    this.self = self;
    this.scheduler = scheduler;
  }

  @Override
  public View of(String volumeId) {
    Optional<Replication> replication = backend.replication();
    Optional<String> owner = Routing.ownerIfOurs(backend, volumeId, true);
    if (replication.isEmpty() || owner.isEmpty()) {
      return new View(Optional.empty(), Optional.empty());
    }
    Replication r = replication.get();
    if (owner.get().equals(self)) {
      return new View(r.settings(volumeId).filter(ReplicationSettings::on).map(s -> owned(r, volumeId, s)),
          Optional.empty());
    }
    Replication.ReplicaState state = r.replicaState(volumeId);
    if (!state.exists()) {
      return new View(Optional.empty(), Optional.empty());
    }
    return new View(Optional.empty(), Optional.of(new Held(r.replicaLocation(volumeId).orElse("(not named by the"
        + " backend)"), state.newest().map(Replication.Point::name), state.resumeToken().isPresent())));
  }

  private Owned owned(Replication r, String volumeId, ReplicationSettings s) {
    if (scheduler.isEmpty()) {
      return new Owned(s.replicas(), s.interval(), java.time.Instant.EPOCH, false, List.of());
    }
    ReplicationScheduler rounds = scheduler.get();
    List<Replication.Point> points = r.replicationSnapshots(volumeId);
    List<Copy> copies = s.nodes().stream().map(node -> {
      Optional<ReplicationScheduler.LastRound> last = rounds.last(volumeId, node);
      OptionalLong guid = last.map(ReplicationScheduler.LastRound::newest).orElse(OptionalLong.empty());
      Optional<String> newest = guid.isEmpty() ? Optional.empty()
          : points.stream().filter(p -> p.guid() == guid.getAsLong()).map(Replication.Point::name).findFirst();
      return new Copy(node, newest, last.map(ReplicationScheduler.LastRound::started),
          last.map(ReplicationScheduler.LastRound::ended), last.flatMap(ReplicationScheduler.LastRound::error),
          rounds.upToDate(volumeId, node));
    }).toList();
    return new Owned(s.replicas(), s.interval(), rounds.since(), true, copies);
  }
}
