package dev.caravan.csi.observe.metrics;

import dev.caravan.csi.support.BuildInfo;
import dev.caravan.csi.backend.Backend;
import dev.caravan.csi.backend.PoolReport;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.observe.nomad.NomadPaths.NomadVolume;
import dev.caravan.csi.observe.stats.UsageCollector;
import dev.caravan.csi.observe.stats.VolumeUsage;
import dev.caravan.storage.fs.FsStats;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.core.metrics.Info;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.instrumentation.jvm.JvmMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.Unit;
import java.io.IOException;
import java.io.OutputStream;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * {@link Metrics} on a Prometheus registry of its own (never the global default one): RPC,
 * node-operation and backend-operation counters and latency histograms, plus gauges read at scrape
 * time from the node journal, the usage collector, the backend's pools and the staged volumes'
 * multipath maps, plus JVM and process metrics. Exposed in the Prometheus text format by {@link #write}.
 */
public final class PrometheusMetrics implements Metrics {
  private static final double[] RPC_BUCKETS = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120
  };
  private static final double[] OP_BUCKETS = {
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300
  };
  private static final String[] VOLUME_LABELS = {"volume_id", "nomad_namespace", "nomad_volume_id"};

  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final Counter rpcTotal;
  private final Histogram rpcSeconds;
  private final Counter nodeOpTotal;
  private final Histogram nodeOpSeconds;
  private final Counter backendOpTotal;
  private final Histogram backendOpSeconds;
  private final Counter fencedPublishes;
  private final Counter forcedDetaches;
  private final Counter peerRefusals;
  private final Counter replicationBytes;
  private final Counter replicationFailures;
  /**
   * The replication scheduler's readings, set when peering starts. The gauges are registered with the
   * other families, so that every plugin has them (without samples until a volume is replicated).
   */
  private volatile Supplier<java.util.Map<java.util.List<String>, Double>> replicationLags = java.util.Map::of;
  private volatile Supplier<java.util.Map<String, Double>> replicationIntervals = java.util.Map::of;
  private final Clock clock = Clock.systemUTC();
  private final PrometheusTextFormatWriter writer = PrometheusTextFormatWriter.create();
  /** Whether the JVM and process metrics are registered yet: at the first scrape, not at start. */
  private boolean jvmMetrics;

  public PrometheusMetrics() {
    rpcTotal = Counter.builder().name("caravan_rpc_total")
        .help("CSI RPCs handled, by method and gRPC status code.")
        .labelNames("method", "code").register(registry);
    rpcSeconds = Histogram.builder().name("caravan_rpc_duration_seconds")
        .help("CSI RPC latency, by method and gRPC status code.").unit(Unit.SECONDS)
        .labelNames("method", "code").classicOnly().classicUpperBounds(RPC_BUCKETS).register(registry);
    nodeOpTotal = Counter.builder().name("caravan_node_operations_total")
        .help("Host operations of the node engine (attach, detach, format, mount, bind, unmount, grow), by outcome.")
        .labelNames("op", "outcome").register(registry);
    nodeOpSeconds = Histogram.builder().name("caravan_node_operation_duration_seconds")
        .help("Latency of the node engine's host operations.").unit(Unit.SECONDS)
        .labelNames("op").classicOnly().classicUpperBounds(OP_BUCKETS).register(registry);
    backendOpTotal = Counter.builder().name("caravan_backend_operations_total")
        .help("Backend operations (create, clone, destroy, snapshot, snapshot_destroy, grow), by outcome.")
        .labelNames("backend", "op", "outcome").register(registry);
    backendOpSeconds = Histogram.builder().name("caravan_backend_operation_duration_seconds")
        .help("Latency of backend operations.").unit(Unit.SECONDS)
        .labelNames("backend", "op").classicOnly().classicUpperBounds(OP_BUCKETS).register(registry);
    fencedPublishes = Counter.builder().name("caravan_fenced_publishes_total")
        .help("ControllerPublishVolume calls the backend refused with FAILED_PRECONDITION while the storage had the"
            + " volume attached to another node (the fence).")
        .labelNames("backend").register(registry);
    forcedDetaches = Counter.builder().name("caravan_forced_detaches_total")
        .help("ControllerUnpublishVolume calls that removed a node's attachment after that attachment had refused"
            + " another node's publish of the volume, as this instance saw since it started.")
        .labelNames("backend").register(registry);
    peerRefusals = Counter.builder().name("caravan_peer_refusals_total")
        .help("Peer handshakes and calls this node refused, by reason: plaintext, no_certificate, unknown_ca, expired,"
            + " not_a_peer (the certificate names no node of the peer set), wrong_node (a node called answered with"
            + " another node's certificate), handshake (any other TLS failure).")
        .labelNames("reason").register(registry);
    replicationBytes = Counter.builder().name("caravan_replication_sent_bytes_total")
        .help("Bytes of replication streams this node sent, by volume and replica node.")
        .labelNames("volume", "node").register(registry);
    replicationFailures = Counter.builder().name("caravan_replication_failures_total")
        .help("Replication rounds that did not bring a replica up to date, by volume and replica node.")
        .labelNames("volume", "node").register(registry);
    GaugeWithCallback.builder().name("caravan_replication_lag_seconds")
        .help("Age of each replica of a volume this node owns: seconds since the start of the last replication round"
            + " that brought it up to date (absent until one has, since this plugin started).")
        .labelNames("volume", "node")
        .callback(cb -> replicationLags.get().forEach((key, seconds) -> cb.call(seconds, key.get(0), key.get(1))))
        .register(registry);
    GaugeWithCallback.builder().name("caravan_replication_interval_seconds")
        .help("Seconds between the replication rounds of each replicated volume this node owns (its"
            + " replicationInterval), to compare caravan_replication_lag_seconds with.")
        .labelNames("volume")
        .callback(cb -> replicationIntervals.get().forEach((volume, seconds) -> cb.call(seconds, volume)))
        .register(registry);
    // JvmMetrics is not registered here: it reads the platform MXBeans (java.lang.management and its
    // JMX machinery), about 0.2 s of a cold start's main thread before the CSI socket could open, for
    // figures nobody asks for until the first scrape (registeredRegistry).
  }

  /** The registry, with the JVM and process metrics registered the first time it is asked for. */
  private synchronized PrometheusRegistry registeredRegistry() {
    if (!jvmMetrics) {
      JvmMetrics.builder().register(registry);
      jvmMetrics = true;
    }
    return registry;
  }

  /** Registers the scrape-time gauges: node state, per-volume usage, pools, multipath paths, build info. */
  public void bind(String driver, NodeJournal journal, UsageCollector usage, Backend backend, Clock clock) {
    Info.builder().name("caravan_build").help("Caravan version and driver.").labelNames("version", "driver")
        .register(registry).setLabelValues(BuildInfo.version(), driver);
    GaugeWithCallback.builder().name("caravan_node_staged_volumes")
        .help("Volumes staged on this node (node journal).")
        .callback(cb -> cb.call(journal.all().size())).register(registry);
    GaugeWithCallback.builder().name("caravan_node_published_targets")
        .help("Publish targets on this node (node journal).")
        .callback(cb -> cb.call(journal.all().stream().mapToInt(v -> v.targets().size()).sum())).register(registry);
    GaugeWithCallback.builder().name("caravan_node_published_volumes")
        .help("Volumes with at least one publish target on this node (node journal).")
        .callback(cb -> cb.call((double) journal.all().stream().filter(v -> !v.targets().isEmpty()).count()))
        .register(registry);

    volumeGauge(usage, "caravan_volume_total_bytes", "Filesystem size (statvfs) of each staged volume.",
        u -> u.fs().map(FsStats::totalBytes).orElse(-1L));
    volumeGauge(usage, "caravan_volume_used_bytes", "Bytes used (statvfs).", u -> u.fs().map(FsStats::usedBytes).orElse(-1L));
    volumeGauge(usage, "caravan_volume_available_bytes", "Bytes available to unprivileged writers (statvfs).",
        u -> u.fs().map(FsStats::availableBytes).orElse(-1L));
    volumeGauge(usage, "caravan_volume_device_bytes", "Size of the volume's block device.", VolumeUsage::deviceBytes);
    volumeGauge(usage, "caravan_volume_inodes", "Inodes in the filesystem (statvfs).",
        u -> u.fs().map(FsStats::totalInodes).orElse(-1L));
    volumeGauge(usage, "caravan_volume_inodes_used", "Inodes in use (statvfs).", u -> u.fs().map(FsStats::usedInodes).orElse(-1L));
    volumeGauge(usage, "caravan_volume_inodes_free", "Inodes free (statvfs).", u -> u.fs().map(FsStats::freeInodes).orElse(-1L));
    volumeGauge(usage, "caravan_volume_files", "Regular files found by the last tree walk.",
        u -> u.walk().map(VolumeUsage.Walk::files).orElse(-1L));
    volumeGauge(usage, "caravan_volume_directories", "Directories found by the last tree walk.",
        u -> u.walk().map(VolumeUsage.Walk::directories).orElse(-1L));
    volumeGauge(usage, "caravan_volume_other_entries", "Other entries (links, devices, sockets) found by the last tree walk.",
        u -> u.walk().map(VolumeUsage.Walk::others).orElse(-1L));
    volumeGauge(usage, "caravan_volume_walk_duration_seconds", "Duration of the last tree walk.",
        u -> u.walk().map(w -> w.duration().toNanos() / 1e9).orElse(-1.0));
    volumeGauge(usage, "caravan_volume_walk_complete", "1 if the last tree walk saw everything.",
        u -> u.walk().map(w -> w.complete() ? 1 : 0).orElse(0));
    volumeGauge(usage, "caravan_volume_statfs_age_seconds", "Age of the last statvfs figures.",
        u -> u.statfsAt().map(t -> Duration.between(t, clock.instant()).toNanos() / 1e9).orElse(-1.0));
    volumeGauge(usage, "caravan_volume_walk_age_seconds", "Age of the last tree walk.",
        u -> u.walk().map(w -> Duration.between(w.at(), clock.instant()).toNanos() / 1e9).orElse(-1.0));
    volumeGauge(usage, "caravan_volume_stale", "1 if the figures are older than the stale limit.", u -> u.stale() ? 1 : 0);

    poolGauge(backend, "caravan_pool_online", "1 if the pool is online.", p -> p.online() ? 1 : 0);
    poolGauge(backend, "caravan_pool_size_bytes", "Pool size.", PoolReport::sizeBytes);
    poolGauge(backend, "caravan_pool_allocated_bytes", "Bytes promised to volumes.", PoolReport::allocatedBytes);
    poolGauge(backend, "caravan_pool_free_bytes", "Free bytes in the pool.", PoolReport::freeBytes);
    poolGauge(backend, "caravan_pool_volumes", "Volumes in the pool.", PoolReport::volumes);
    MultipathPathsGauge.register(registry, journal);
  }

  /** A per-volume gauge; volumes without a figure yet (negative) are left out rather than shown as 0. */
  private void volumeGauge(UsageCollector usage, String name, String help, ToDoubleFunction<VolumeUsage> value) {
    GaugeWithCallback.builder().name(name).help(help).labelNames(VOLUME_LABELS).callback(cb -> {
      for (VolumeUsage u : usage.all()) {
        double v = value.applyAsDouble(u);
        if (v >= 0) {
          cb.call(v, u.volumeId(), u.nomad().map(NomadVolume::namespace).orElse(""),
              u.nomad().map(NomadVolume::volumeId).orElse(""));
        }
      }
    }).register(registry);
  }

  private void poolGauge(Backend backend, String name, String help, ToDoubleFunction<PoolReport> value) {
    Function<Backend, List<PoolReport>> pools = b -> {
      try {
        return b.pools();
      } catch (RuntimeException e) {
        return List.of(); // a scrape must not fail because a pool cannot be read
      }
    };
    GaugeWithCallback.builder().name(name).help(help).labelNames("backend", "pool").callback(cb -> {
      for (PoolReport p : pools.apply(backend)) {
        cb.call(value.applyAsDouble(p), backend.driver(), p.name());
      }
    }).register(registry);
  }

  /** The registry (with the JVM and process metrics, registered now if no scrape did yet). */
  public PrometheusRegistry registry() {
    return registeredRegistry();
  }

  public String contentType() {
    return writer.getContentType();
  }

  public void write(OutputStream out) throws IOException {
    writer.write(out, registeredRegistry().scrape());
  }

  @Override
  public boolean enabled() {
    return true;
  }

  @Override
  public void rpc(String method, String code, long nanos) {
    rpcTotal.labelValues(method, code).inc();
    rpcSeconds.labelValues(method, code).observe(nanos / 1e9);
  }

  @Override
  public void operation(String op, String outcome, long nanos) {
    nodeOpTotal.labelValues(op, outcome).inc();
    nodeOpSeconds.labelValues(op).observe(nanos / 1e9);
  }

  @Override
  public void fencedPublish(String backend) {
    fencedPublishes.labelValues(backend).inc();
  }

  @Override
  public void forcedDetach(String backend) {
    forcedDetaches.labelValues(backend).inc();
  }

  @Override
  public void peerRefusal(String reason) {
    peerRefusals.labelValues(reason).inc();
  }

  @Override
  public void peerCertificateExpiry(Supplier<Instant> notAfter) {
    GaugeWithCallback.builder().name("caravan_peer_certificate_days_left")
        .help("Days until this node's peer certificate (--peer-tls-cert, as last read) expires; negative once it has.")
        .callback(cb -> cb.call(Duration.between(clock.instant(), notAfter.get()).toSeconds() / 86400.0))
        .register(registry);
  }

  @Override
  public void replicationSent(String volume, String node, long bytes) {
    replicationBytes.labelValues(volume, node).inc(bytes);
  }

  @Override
  public void replicationFailure(String volume, String node) {
    replicationFailures.labelValues(volume, node).inc();
  }

  @Override
  public void replicationLag(Supplier<java.util.Map<java.util.List<String>, Double>> lags) {
    replicationLags = lags;
  }

  @Override
  public void replicationInterval(Supplier<java.util.Map<String, Double>> intervals) {
    replicationIntervals = intervals;
  }

  @Override
  public void backendOperation(String backend, String op, String outcome, long nanos) {
    backendOpTotal.labelValues(backend, op, outcome).inc();
    backendOpSeconds.labelValues(backend, op).observe(nanos / 1e9);
  }
}
