package dev.caravan.csi.peer;

import dev.caravan.csi.backend.Replication;
import dev.caravan.csi.backend.ReplicationSettings;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import dev.caravan.csi.observe.metrics.Metrics;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Brings every replicated volume this node owns up to date on its replica nodes, once per its
 * interval: one round per volume at a time, each replica node in turn ({@link Replicator}). Which
 * volumes are replicated, and where, is read from the volumes themselves at every tick, so a
 * restarted plugin carries on where the last one stopped; only the time of each volume's next round
 * is kept in memory (after a restart the first round is at once). After each round the owner's
 * replication snapshots that no replica needs are destroyed: each replica's newest, and what an
 * interrupted stream needs to resume, are kept. For a replica node that did not answer, what it
 * needed when it last answered is kept; one that has not answered since the plugin started keeps
 * every snapshot from being destroyed, since nothing says what it holds.
 */
final class ReplicationScheduler implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(ReplicationScheduler.class.getName());
  static final Duration TICK = Duration.ofSeconds(1);

  /** One attempt to bring a volume's replica on a node up to date ({@link Replicator#replicate}). */
  interface Sender {
    Replicator.Attempt replicate(String volumeId, String node);
  }

  private final Replication local;
  private final Sender replicator;
  private final Clock clock;
  private final ScheduledExecutorService timer;
  private final ExecutorService rounds = Executors.newVirtualThreadPerTaskExecutor();
  private final Map<String, Instant> next = new ConcurrentHashMap<>();
  private final Set<String> running = ConcurrentHashMap.newKeySet();
  private final Set<String> held = ConcurrentHashMap.newKeySet();
  /** While above 0, no round starts: a CreateVolume is making a volume whose id a deleted volume may have had. */
  private final AtomicInteger paused = new AtomicInteger();
  /** Held by a tick while it starts rounds, so that {@link #pause} can wait for one under way. */
  private final ReentrantLock ticking = new ReentrantLock();
  private final Object roundEnded = new Object();
  /** (volume, node) to when the last round that brought that replica up to date started. */
  private final Map<List<String>, Instant> upToDate = new ConcurrentHashMap<>();
  /** (volume, node) to the GUIDs of the snapshots that replica needed when it last answered. */
  private final Map<List<String>, Set<Long>> needs = new ConcurrentHashMap<>();
  private volatile Metrics metrics = Metrics.NONE;
  /** When this scheduler started: rounds before it (an earlier plugin's) are not known here. */
  private final Instant since;
  /** (volume, node) to the last round to that node since {@link #since}, for the inspector. */
  private final Map<List<String>, LastRound> last = new ConcurrentHashMap<>();
  /** The replicated volumes and their settings as the last tick read them (the scrape reads no storage). */
  private volatile Map<String, ReplicationSettings> seen = Map.of();

  /**
   * The last round of a volume to one replica node.
   *
   * @param error why it failed, if it did
   * @param newest the GUID of the newest replication snapshot the replica holds, as the last round that
   *     reached the node learned it (empty when it holds none, or no round has reached it)
   */
  record LastRound(Instant started, Instant ended, Optional<String> error, OptionalLong newest) {}

  ReplicationScheduler(Replication local, Sender replicator, Clock clock) {
    this.local = local;
    this.replicator = replicator;
    this.clock = clock;
    this.since = clock.instant();
    this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "caravan-replication");
      t.setDaemon(true);
      return t;
    });
  }

  /** Where bytes sent, failures and each replica's age are counted. */
  void observe(Metrics m) {
    this.metrics = m;
    m.replicationLag(() -> {
      Instant now = clock.instant();
      Map<List<String>, Double> out = new TreeMap<>(Comparator.comparing((List<String> k) -> k.get(0))
          .thenComparing(k -> k.get(1)));
      upToDate.forEach((k, at) -> out.put(k, Duration.between(at, now).toMillis() / 1000.0));
      return out;
    });
    m.replicationInterval(() -> {
      Map<String, Double> out = new TreeMap<>();
      seen.forEach((id, s) -> out.put(id, (double) s.interval().toSeconds()));
      return out;
    });
  }

  /** When this scheduler started (with its plugin): no round before it is known here. */
  Instant since() {
    return since;
  }

  /** The last round of the volume to {@code node} since {@link #since}; empty when none has ended. */
  Optional<LastRound> last(String volumeId, String node) {
    return Optional.ofNullable(last.get(List.of(volumeId, node)));
  }

  /** When the last round that brought the volume's replica on {@code node} up to date started. */
  Optional<Instant> upToDate(String volumeId, String node) {
    return Optional.ofNullable(upToDate.get(List.of(volumeId, node)));
  }

  void start() {
    // tick logs its own failures: nothing to collect from the future.
    ScheduledFuture<?> unused =
        timer.scheduleWithFixedDelay(this::tick, TICK.toMillis(), TICK.toMillis(), TimeUnit.MILLISECONDS);
  }

  private void tick() {
    ticking.lock();
    try {
      if (paused.get() == 0) {
        startRounds();
      }
    } finally {
      ticking.unlock();
    }
  }

  private void startRounds() {
    Map<String, ReplicationSettings> volumes;
    try {
      volumes = local.replicated();
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "cannot list the replicated volumes: {0}", e.getMessage());
      return;
    }
    next.keySet().retainAll(volumes.keySet());
    for (Map<List<String>, ?> perReplica : List.of(upToDate, last, needs)) {
      perReplica.keySet().removeIf(k -> !volumes.containsKey(k.get(0)) || !volumes.get(k.get(0)).nodes().contains(k.get(1)));
    }
    seen = Map.copyOf(volumes);
    Instant now = clock.instant();
    for (Map.Entry<String, ReplicationSettings> e : volumes.entrySet()) {
      String id = e.getKey();
      if (held.contains(id) || next.getOrDefault(id, now).isAfter(now) || !running.add(id)) {
        continue;
      }
      next.put(id, now.plus(e.getValue().interval()));
      rounds.execute(() -> {
        try {
          if (!held.contains(id)) {
            round(id, e.getValue());
          }
        } finally {
          running.remove(id);
          synchronized (roundEnded) {
            roundEnded.notifyAll();
          }
        }
      });
    }
  }

  /** One round of volume {@code id}: each replica node in turn, then the pruning. */
  void round(String id, ReplicationSettings settings) {
    try {
      List<Replicator.Attempt> attempts = new ArrayList<>();
      for (String node : settings.nodes()) {
        Instant started = clock.instant();
        Replicator.Attempt a = replicator.replicate(id, node);
        attempts.add(a);
        List<String> key = List.of(id, node);
        OptionalLong before = Optional.ofNullable(last.get(key)).map(LastRound::newest).orElse(OptionalLong.empty());
        last.put(key, new LastRound(started, clock.instant(), a.failure().map(RuntimeException::getMessage),
            a.known() ? a.shared() : before));
        if (a.bytes() > 0) {
          metrics.replicationSent(id, node, a.bytes());
        }
        if (a.failure().isPresent()) {
          metrics.replicationFailure(id, node);
          LOG.log(System.Logger.Level.WARNING, "replication of {0} to node {1} failed; the next round tries again:"
              + " {2}", id, node, a.failure().get().getMessage());
        } else {
          upToDate.put(key, started);
        }
        if (!upToDate.containsKey(key)) {
          heldSince(id, a).ifPresent(t -> upToDate.put(key, t));
        }
      }
      Set<Long> keep = new HashSet<>();
      boolean everyNeedKnown = true;
      for (Replicator.Attempt a : attempts) {
        List<String> key = List.of(id, a.node());
        if (a.known()) {
          Set<Long> needed = new HashSet<>();
          a.shared().ifPresent(needed::add);
          a.inFlight().ifPresent(needed::add);
          needs.put(key, Set.copyOf(needed));
        }
        Set<Long> needed = needs.get(key);
        if (needed == null) {
          everyNeedKnown = false; // not answered since the start: it may need any of them
        } else {
          keep.addAll(needed);
        }
      }
      if (everyNeedKnown) {
        local.prune(id, keep);
      }
    } catch (RuntimeException e) {
      // The volume deleted meanwhile, its pool gone: the next tick sees it.
      LOG.log(System.Logger.Level.WARNING, "replication round of {0} failed: {1}", id, e.getMessage());
    }
  }

  /**
   * When the copy on a node no round has brought up to date since the start was taken, so that its lag
   * is shown (and alerted on) from the first round after a restart: the node answered, the time of the
   * snapshot it holds; it has not answered since the start, the time of the owner's oldest replication
   * snapshot, which is no newer than the copy's, since nothing a copy may hold is pruned meanwhile.
   * The lag may then read high, never low.
   */
  private Optional<Instant> heldSince(String id, Replicator.Attempt a) {
    List<Replication.Point> points;
    try {
      points = local.replicationSnapshots(id);
    } catch (RuntimeException e) {
      return Optional.empty(); // the volume going: the next tick sees it
    }
    Optional<Replication.Point> held;
    if (a.known()) {
      held = points.stream().filter(p -> a.shared().isPresent() && p.guid() == a.shared().getAsLong()).findFirst();
    } else if (needs.containsKey(List.of(id, a.node()))) {
      held = Optional.empty(); // it answered since the start, holding nothing: pruning no longer keeps a bound
    } else {
      held = points.stream().findFirst();
    }
    return held.flatMap(p -> Replication.pointTime(p.name()));
  }

  /**
   * Starts no round of the volume until {@link #release}, and waits for the one running to end (for
   * {@link Replicator#STREAM_DEADLINE} at most): a volume being deleted is neither snapshotted nor sent.
   */
  void hold(String volumeId) {
    held.add(volumeId);
    long end = System.nanoTime() + Replicator.STREAM_DEADLINE.toNanos();
    synchronized (roundEnded) {
      while (running.contains(volumeId) && System.nanoTime() < end) {
        try {
          roundEnded.wait(1000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }

  void release(String volumeId) {
    held.remove(volumeId);
  }

  /**
   * Starts no new round until {@link #resume}; rounds running go on. For the time a volume is made:
   * its first round waits until whatever of an earlier volume of its id is gone.
   */
  void pause() {
    // Under the tick's lock: a tick under way, which read no pause, ends before the pause begins.
    ticking.lock();
    try {
      paused.incrementAndGet();
    } finally {
      ticking.unlock();
    }
  }

  void resume() {
    paused.decrementAndGet();
  }

  @Override
  public void close() {
    timer.shutdownNow();
    rounds.shutdownNow();
  }
}
