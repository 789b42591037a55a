package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Replication;
import dev.caravan.csi.backend.ReplicationSettings;
import dev.caravan.csi.observe.metrics.PrometheusMetrics;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The owner's pruning between rounds, with the owner's replication snapshots held in memory and each
 * replica node either answering (it then holds the snapshot its attempt sent) or down. The streams
 * themselves are ReplicationOnLocalTest's.
 */
class ReplicationSchedulerTest {
  private static final String VOLUME = "local/v1/n1/tank/peers/vol-a";
  private static final ReplicationSettings TWO =
      new ReplicationSettings(2, Duration.ofSeconds(5), List.of("n2", "n3"));

  private final Snapshots owner = new Snapshots();
  private final Set<String> down = new HashSet<>();
  /** Node to the GUID of the snapshot it holds. */
  private final Map<String, Long> held = new HashMap<>();
  private final ReplicationScheduler scheduler = new ReplicationScheduler(owner, this::attempt, Clock.systemUTC());

  @AfterEach
  void close() {
    scheduler.close();
  }

  /** Nodes that answer but whose rounds fail: they keep what they hold. */
  private final Set<String> failing = new HashSet<>();

  /** Nodes that answer holding nothing, and whose receives fail. */
  private final Set<String> empty = new HashSet<>();

  private Replicator.Attempt attempt(String volumeId, String node) {
    if (empty.contains(node) && !down.contains(node)) {
      return new Replicator.Attempt(node, true, OptionalLong.empty(), OptionalLong.empty(), 0,
          Optional.of(CsiException.failedPrecondition("the receive on " + node + " was refused")));
    }
    if (failing.contains(node)) {
      return new Replicator.Attempt(node, true, OptionalLong.of(held.get(node)), OptionalLong.empty(), 0,
          Optional.of(CsiException.failedPrecondition("the receive on " + node + " was refused")));
    }
    if (down.contains(node)) {
      return new Replicator.Attempt(node, false, OptionalLong.empty(), OptionalLong.empty(), 0,
          Optional.of(new CsiException(CsiException.Kind.UNAVAILABLE, "node " + node + " cannot be reached")));
    }
    Replication.Point next = owner.takeReplicationSnapshot(volumeId);
    held.put(node, next.guid());
    return new Replicator.Attempt(node, true, OptionalLong.of(next.guid()), OptionalLong.empty(), 1, Optional.empty());
  }

  @Test
  void whileOneReplicaNodeIsDownTheOwnerKeepsWhatThatNodeHoldsAndTheOtherNodesNewestOnly() {
    scheduler.round(VOLUME, TWO);
    assertThat(owner.guids()).containsExactlyInAnyOrder(held.get("n2"), held.get("n3"));

    down.add("n3");
    long n3Holds = held.get("n3");
    for (int i = 0; i < 10; i++) {
      scheduler.round(VOLUME, TWO);
    }
    assertThat(owner.guids()).as("after ten rounds with n3 down").containsExactlyInAnyOrder(held.get("n2"), n3Holds);

    down.clear();
    scheduler.round(VOLUME, TWO);
    assertThat(owner.guids()).as("n3 back").containsExactlyInAnyOrder(held.get("n2"), held.get("n3"));
  }

  @Test
  void aReplicaNodeThatHasNotAnsweredSinceTheStartKeepsEverySnapshot() {
    owner.takeReplicationSnapshot(VOLUME); // what a plugin before this one took
    down.add("n3");
    for (int i = 0; i < 3; i++) {
      scheduler.round(VOLUME, TWO);
    }
    assertThat(owner.guids()).as("nothing says what n3 holds: nothing is destroyed").hasSize(4);
  }

  @Test
  void afterARestartACopyNoRoundReachesShowsItsLagFromWhatItHoldsNeverLess() throws IOException {
    // What the plugin before this one did: n3's copy is 10 minutes old, n2's one minute.
    long now = System.currentTimeMillis();
    held.put("n3", owner.take("repl-" + (now - 600_000)).guid());
    held.put("n2", owner.take("repl-" + (now - 60_000)).guid());
    PrometheusMetrics metrics = new PrometheusMetrics();
    scheduler.observe(metrics);
    assertThat(lags(metrics)).as("before any round of this plugin").isEmpty();

    failing.add("n2"); // answers, and says what it holds
    down.add("n3"); // does not answer: its copy is no newer than the owner's oldest snapshot
    scheduler.round(VOLUME, TWO);
    Map<String, Double> lags = lags(metrics);
    assertThat(lags.get("n2")).as("n2's lag, from the snapshot it holds").isBetween(60.0, 120.0);
    assertThat(lags.get("n3")).as("n3's lag, from the owner's oldest").isBetween(600.0, 660.0);
  }

  @Test
  void aCopyWhoseNodeLastAnsweredHoldingNothingShowsNoLagRatherThanALowOne() throws IOException {
    owner.take("repl-" + (System.currentTimeMillis() - 600_000));
    PrometheusMetrics metrics = new PrometheusMetrics();
    scheduler.observe(metrics);
    empty.add("n3");
    scheduler.round(VOLUME, TWO); // n2 brought up to date; n3 answers that it holds nothing
    down.add("n3");
    scheduler.round(VOLUME, TWO); // the owner's oldest snapshot is now n2's, of this round: no bound on n3's
    assertThat(lags(metrics)).containsKey("n2").doesNotContainKey("n3");
  }

  /** The exported caravan_replication_lag_seconds of {@link #VOLUME}, by replica node. */
  private static Map<String, Double> lags(PrometheusMetrics metrics) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    metrics.write(out);
    Map<String, Double> lags = new HashMap<>();
    Matcher m = Pattern.compile("caravan_replication_lag_seconds\\{node=\"(n[0-9])\",volume=\""
        + Pattern.quote(VOLUME) + "\"\\} (\\S+)").matcher(out.toString(StandardCharsets.UTF_8));
    while (m.find()) {
      lags.put(m.group(1), Double.parseDouble(m.group(2)));
    }
    return lags;
  }

  /** The owner's side of {@link Replication}, its replication snapshots in memory. */
  private static final class Snapshots implements Replication {
    private final List<Point> points = new ArrayList<>();
    private long next = 1;

    List<Long> guids() {
      return points.stream().map(Point::guid).toList();
    }

    @Override
    public List<Point> replicationSnapshots(String volumeId) {
      return List.copyOf(points);
    }

    @Override
    public Point takeReplicationSnapshot(String volumeId) {
      return take("repl-" + next);
    }

    Point take(String name) {
      Point p = new Point(name, 1000 + next);
      next++;
      points.add(p);
      return p;
    }

    @Override
    public void prune(String volumeId, Set<Long> keep) {
      points.removeIf(p -> !keep.contains(p.guid()));
    }

    @Override
    public void attach() {}

    @Override
    public Map<String, ReplicationSettings> replicated() {
      return Map.of(VOLUME, TWO);
    }

    @Override
    public Optional<ReplicationSettings> settings(String volumeId) {
      return Optional.of(TWO);
    }

    @Override
    public long send(String volumeId, Optional<String> from, String to, OutputStream out) {
      throw new UnsupportedOperationException();
    }

    @Override
    public long resume(String volumeId, String token, OutputStream out) {
      throw new UnsupportedOperationException();
    }

    @Override
    public String resumedSnapshot(String token) {
      throw new UnsupportedOperationException();
    }

    @Override
    public ReplicaState replicaState(String volumeId) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Point receive(String volumeId, String snapshot, StreamKind kind, InputStream in) {
      throw new UnsupportedOperationException();
    }

    @Override
    public String afterABrokenStream() {
      throw new UnsupportedOperationException();
    }

    @Override
    public boolean deleteReplica(String volumeId) {
      throw new UnsupportedOperationException();
    }

    @Override
    public Set<String> replicas() {
      return Set.of();
    }
  }
}
