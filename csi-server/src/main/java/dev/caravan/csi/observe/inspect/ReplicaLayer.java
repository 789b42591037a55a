package dev.caravan.csi.observe.inspect;

import dev.caravan.csi.backend.Replication;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The chain's {@code replication} layer: on the owner of a replicated volume, where each copy is, its
 * age, and the last round's outcome (from the rounds this plugin ran since it started, which it says
 * plainly when none has ended yet); on a replica node, the copy it holds. A failed round is a finding
 * naming the node and the error.
 */
public final class ReplicaLayer {
  /** The layer, and its findings. */
  public record Result(Map<String, Object> layer, List<Finding> findings) {}

  private ReplicaLayer() {}

  /** The layer of {@code view}, or empty when this node neither replicates the volume nor holds a copy. */
  public static Optional<Result> of(String volumeId, Replicas.View view, Instant now) {
    if (view.owned().isPresent()) {
      return Optional.of(owned(volumeId, view.owned().get(), now));
    }
    return view.held().map(h -> held(volumeId, h, now));
  }

  /** The layer when the replicas could not be read within the inspector's bound. */
  static Result unread(String why) {
    Map<String, Object> evidence = new LinkedHashMap<>();
    evidence.put("error", why);
    return new Result(layer("unknown", evidence), List.of());
  }

  private static Result owned(String volumeId, Replicas.Owned o, Instant now) {
    Map<String, Object> evidence = new LinkedHashMap<>();
    List<Finding> findings = new ArrayList<>();
    evidence.put("role", "owner");
    evidence.put("replicas", o.replicas());
    evidence.put("interval_seconds", o.interval().toSeconds());
    if (!o.rounds()) {
      evidence.put("rounds", "none: this plugin has no peer channel, so nothing sends the copies");
      return new Result(layer("not-replicating", evidence), findings);
    }
    evidence.put("rounds_since", o.since().toString());
    Map<String, Object> copies = new LinkedHashMap<>();
    boolean failing = false;
    boolean unknown = false;
    for (Replicas.Copy c : o.copies()) {
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("newest_copy", c.newestCopy());
      Optional<Instant> taken = c.newestCopy().flatMap(Replication::pointTime);
      row.put("copy_taken_at", taken.map(Instant::toString));
      row.put("copy_age_seconds", taken.map(t -> seconds(t, now)));
      row.put("up_to_date_at", c.upToDateAt().map(Instant::toString));
      if (c.lastRoundStarted().isEmpty()) {
        unknown = true;
        row.put("last_round", "none has ended since this plugin started at " + o.since() + ": the copy on node "
            + c.node() + " and the last outcome are unknown here until one does (the first starts at once)");
        findings.add(Finding.info("replication-no-round-yet",
            "This plugin started at " + o.since() + " and no replication round of " + volumeId + " to node " + c.node()
                + " has ended since: where that copy stands, and whether rounds succeed, is unknown here until one"
                + " does (the first starts at once, then one every " + o.interval().toSeconds() + " s).",
            "caravan inspect " + volumeId + "  # again in " + o.interval().toSeconds() + " s; on node " + c.node()
                + " it shows the copy held there"));
      } else {
        Map<String, Object> last = new LinkedHashMap<>();
        last.put("started_at", c.lastRoundStarted().get().toString());
        c.lastRoundEnded().ifPresent(e -> last.put("ended_at", e.toString()));
        last.put("outcome", c.lastError().isPresent() ? "failed" : "ok");
        c.lastError().ifPresent(e -> last.put("error", e));
        row.put("last_round", last);
        if (c.lastError().isPresent()) {
          failing = true;
          // The loss window: since the copy the node holds was taken, or since this plugin started when none is known.
          Duration behind = Duration.between(taken.orElse(o.since()), now);
          boolean late = behind.compareTo(o.interval().multipliedBy(2)) > 0;
          String copy = c.newestCopy().map(n -> "The newest copy there is " + n + ", " + seconds(taken.orElse(now), now)
              + " s old")
              .orElse("No copy on node " + c.node() + " is known to this plugin");
          Finding f = new Finding("replication-failing", late ? "error" : "warning",
              "The last replication round of " + volumeId + " to node " + c.node() + " (started at "
                  + c.lastRoundStarted().get() + ") failed: " + c.lastError().get() + ". " + copy + "; what is written"
                  + " after it is lost with this node until a round succeeds.",
              "caravan inspect " + volumeId + "  # on node " + c.node() + ": the copy it holds; the log here has each"
                  + " failure (replication of " + volumeId + " to node " + c.node() + " failed)");
          findings.add(f);
        }
      }
      copies.put(c.node(), row);
    }
    evidence.put("copies", copies);
    return new Result(layer(failing ? "failing" : unknown ? "no-round-yet" : "ok", evidence), findings);
  }

  private static Result held(String volumeId, Replicas.Held h, Instant now) {
    Map<String, Object> evidence = new LinkedHashMap<>();
    evidence.put("role", "replica");
    evidence.put("replica_of", volumeId);
    evidence.put("location", h.location());
    evidence.put("newest_copy", h.newestCopy());
    Optional<Instant> taken = h.newestCopy().flatMap(Replication::pointTime);
    evidence.put("copy_taken_at", taken.map(Instant::toString));
    evidence.put("copy_age_seconds", taken.map(t -> seconds(t, now)));
    evidence.put("receive_waiting_to_resume", h.partial());
    String state = h.newestCopy().isPresent() ? "holds-copy" : h.partial() ? "partial" : "empty";
    return new Result(layer(state, evidence), List.of());
  }

  private static long seconds(Instant from, Instant to) {
    return Math.max(0, Duration.between(from, to).toSeconds());
  }

  private static Map<String, Object> layer(String state, Map<String, Object> evidence) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("state", state);
    m.put("evidence", evidence);
    return m;
  }
}
