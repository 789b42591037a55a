package dev.caravan.csi.observe;

import dev.caravan.csi.backend.Backend;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.node.NodeObserver;
import dev.caravan.csi.observe.http.ObserveApi;
import dev.caravan.csi.observe.http.ObserveServer;
import dev.caravan.csi.observe.inspect.ChainInspector;
import dev.caravan.csi.observe.metrics.MeteredControllerBackend;
import dev.caravan.csi.observe.metrics.Metrics;
import dev.caravan.csi.observe.metrics.MetricsInterceptor;
import dev.caravan.csi.observe.metrics.PrometheusMetrics;
import dev.caravan.csi.observe.stats.UsageCollector;
import io.grpc.ServerInterceptor;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.util.List;
import java.util.Optional;

/**
 * Everything a plugin shows about itself, wired together: the metrics hooks, the usage collector,
 * the claim-chain inspector and the HTTP server that serves all three.
 */
public final class Observability implements AutoCloseable {
  private final String driver;
  private final String nodeId;
  private final ObserveSettings settings;
  private final Backend backend;
  private final NodeJournal journal;
  private final Metrics metrics;
  private final UsageCollector usage;
  private final Clock clock = Clock.systemUTC();
  private ChainInspector inspector;
  private ObserveServer server;

  private Observability(String driver, String nodeId, ObserveSettings settings, Backend backend,
      NodeJournal journal, Metrics metrics, UsageCollector usage) {
    this.driver = driver;
    this.nodeId = nodeId;
    this.settings = settings;
    this.backend = backend;
    this.journal = journal;
    this.metrics = metrics;
    this.usage = usage;
  }

  /** For the plugin of {@code driver} on node {@code nodeId}, configured by {@code o}. */
  public static Observability create(String driver, String nodeId, ObserveSettings o, Backend backend,
      NodeJournal journal) {
    Metrics metrics = o.metrics() ? new PrometheusMetrics() : Metrics.NONE;
    return new Observability(driver, nodeId, o, backend, journal, metrics,
        new UsageCollector(journal, o.stats(), Clock.systemUTC()));
  }

  /** What the node engine reports to: the metrics and the usage collector (which must let go before unmounts). */
  public NodeObserver nodeObserver() {
    return NodeObserver.both(metrics, usage);
  }

  /** The controller backend the services use: metered when metrics are on. */
  public ControllerBackend controller(Backend b) {
    return metrics.enabled() ? new MeteredControllerBackend(b.controller(), metrics, b.driver()) : b.controller();
  }

  public List<ServerInterceptor> interceptors() {
    return metrics.enabled() ? List.of(new MetricsInterceptor(metrics)) : List.of();
  }

  /** Starts background collection and the HTTP server, if configured. */
  public void start(ControllerBackend controller) throws IOException {
    ObserveSettings o = settings;
    if (metrics instanceof PrometheusMetrics p) {
      p.bind(driver, journal, usage, backend, clock);
    }
    inspector = new ChainInspector(nodeId, backend, journal, usage, clock, o.nomad());
    if (o.http().isPresent()) {
      usage.start();
      ObserveApi api = new ObserveApi(nodeId, controller, journal, usage, inspector,
          metrics instanceof PrometheusMetrics p ? Optional.of(p) : Optional.empty(), o.nomad(), clock);
      server = ObserveServer.start(o.http().get(), api);
    }
  }

  public Metrics metrics() {
    return metrics;
  }

  public UsageCollector usage() {
    return usage;
  }

  public ChainInspector inspector() {
    return inspector;
  }

  /** The HTTP server's bound address (the real port when 0 was asked for), if it runs. */
  public Optional<InetSocketAddress> httpAddress() {
    return Optional.ofNullable(server).map(ObserveServer::address);
  }

  @Override
  public void close() {
    if (server != null) {
      server.close();
    }
    usage.close();
  }
}
