package dev.caravan.csi.iscsi;

import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.qnap.QnapSessions;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.observe.metrics.Metrics;
import dev.caravan.csi.observe.metrics.PrometheusMetrics;
import dev.caravan.csi.backend.VolumeLocks;
import dev.caravan.csi.support.Failures;
import dev.caravan.storage.iscsi.Iscsi;
import dev.caravan.storage.iscsi.IscsiSession;
import dev.caravan.storage.iscsi.SessionClaims;
import dev.caravan.storage.iscsi.SessionSweeper;
import dev.caravan.storage.iscsi.SweepOutcome;
import dev.caravan.storage.multipath.Multipath;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import java.util.function.Predicate;

/**
 * Runs host-storage's {@link SessionSweeper} on a qnap node plugin: every {@link IscsiGc#interval()}
 * on a daemon thread, over the sessions {@link QnapSessions} puts in scope, with the node journal
 * and the per-volume locks as the claims ({@link JournalClaims}). Logout only: it never deletes a
 * node record, a LUN or anything on the appliance.
 *
 * <p>It stays idle until this plugin's journal has held a volume: a plugin that serves only the
 * controller (which may run on a node too, with a journal of its own) never stages, so it never
 * sweeps the sessions of the node plugin beside it.
 */
public final class IscsiSweeperService implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(IscsiSweeperService.class.getName());

  private final BiFunction<Predicate<IscsiSession>, SessionClaims, List<SweepOutcome>> sweeper;
  private final Predicate<IscsiSession> scope;
  private final SessionClaims claims;
  private final NodeJournal journal;
  private final Optional<Counter> swept;
  private final Optional<Counter> sweeps;
  private final AtomicInteger unused = new AtomicInteger();
  private ScheduledExecutorService executor;
  private ScheduledFuture<?> task;
  private boolean armed;

  IscsiSweeperService(BiFunction<Predicate<IscsiSession>, SessionClaims, List<SweepOutcome>> sweeper,
      Predicate<IscsiSession> scope, SessionClaims claims, NodeJournal journal, Optional<PrometheusRegistry> registry) {
    this.sweeper = sweeper;
    this.scope = scope;
    this.claims = claims;
    this.journal = journal;
    this.swept = registry.map(r -> Counter.builder().name("caravan_iscsi_sessions_swept_total")
        .help("iSCSI sessions the leaked-session sweeper acted on: logged_out, or failed (flush or logout refused).")
        .labelNames("outcome").register(r));
    this.sweeps = registry.map(r -> Counter.builder().name("caravan_iscsi_sweeps_total")
        .help("Sweeps of the leaked-session sweeper: ok, idle (this plugin has staged nothing yet) or error.")
        .labelNames("outcome").register(r));
    registry.ifPresent(r -> GaugeWithCallback.builder().name("caravan_iscsi_sessions_unused")
        .help("qnap sessions the last sweep found unused and waiting out the grace period.")
        .callback(cb -> cb.call(unused.get())).register(r));
  }

  /**
   * Starts a qnap node's sweeper when {@code gc} is on; otherwise returns something that does nothing.
   * Only a qnap node calls it: the others never load the sweeper's classes.
   *
   * @param options the qnap backend's options ({@code qnap.*} keys without the prefix)
   */
  public static AutoCloseable start(IscsiGc gc, Map<String, String> options, NodeJournal journal,
      ControllerBackend ids, VolumeLocks locks, Metrics metrics) {
    if (!gc.enabled()) {
      return () -> {};
    }
    QnapSessions sessions = QnapSessions.of(options);
    SessionSweeper sweeper = new SessionSweeper(Iscsi.system(), Multipath.system(), gc.grace());
    Optional<PrometheusRegistry> registry =
        metrics instanceof PrometheusMetrics p ? Optional.of(p.registry()) : Optional.empty();
    IscsiSweeperService service = new IscsiSweeperService(sweeper::sweep, sessions::inScope,
        new JournalClaims(journal, sessions, ids::volumeId, locks), journal, registry);
    service.schedule(gc);
    LOG.log(System.Logger.Level.INFO, "iscsi sweeper: on (every {0} s, logout after {1} s unused; --iscsi-gc=off"
        + " disables it)", gc.interval().toSeconds(), gc.grace().toSeconds());
    return service;
  }

  private void schedule(IscsiGc gc) {
    executor = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "caravan-iscsi-sweeper");
      t.setDaemon(true);
      return t;
    });
    long period = gc.interval().toMillis();
    task = executor.scheduleWithFixedDelay(this::tick, period, period, TimeUnit.MILLISECONDS);
  }

  private void tick() {
    try {
      sweepOnce();
    } catch (RuntimeException | LinkageError e) {
      // Never let one failure end the schedule (an executor drops a task that throws).
      sweeps.ifPresent(c -> c.labelValues("error").inc());
      LOG.log(System.Logger.Level.WARNING, "iscsi sweeper: the sweep failed: " + Failures.describe(e), e);
    }
  }

  /** One sweep, unless this plugin has never had a volume in its journal; what it did. */
  synchronized List<SweepOutcome> sweepOnce() {
    if (!armed && journal.all().isEmpty()) {
      sweeps.ifPresent(c -> c.labelValues("idle").inc());
      return List.of();
    }
    if (!armed) {
      armed = true;
      LOG.log(System.Logger.Level.INFO, "iscsi sweeper: this plugin stages volumes; sweeping from now on");
    }
    List<SweepOutcome> outcomes = sweeper.apply(scope, claims);
    int waiting = 0;
    for (SweepOutcome o : outcomes) {
      switch (o.action()) {
        case LOGGED_OUT -> swept.ifPresent(c -> c.labelValues("logged_out").inc());
        case FAILED -> swept.ifPresent(c -> c.labelValues("failed").inc());
        case UNUSED_WAITING -> waiting++;
        default -> { }
      }
    }
    unused.set(waiting);
    sweeps.ifPresent(c -> c.labelValues("ok").inc());
    return outcomes;
  }

  /** Stops sweeping; a sweep under way is given a few seconds to finish its logout. */
  @Override
  public void close() {
    if (executor == null) {
      return;
    }
    task.cancel(false);
    executor.shutdown();
    try {
      if (!executor.awaitTermination(10, TimeUnit.SECONDS)) {
        executor.shutdownNow();
      }
    } catch (InterruptedException e) {
      executor.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }
}
