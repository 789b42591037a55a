package dev.caravan.csi;

import dev.caravan.csi.backend.Backend;
import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.KeyCosts;
import dev.caravan.csi.drivers.Backends;
import dev.caravan.csi.backend.file.FileBackend;
import dev.caravan.csi.iscsi.IscsiGc;
import dev.caravan.csi.iscsi.IscsiSweeperService;
import dev.caravan.csi.node.AllowedRoots;
import dev.caravan.csi.node.NodeEngine;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.Observability;
import dev.caravan.csi.peer.PeerCredentialChecks;
import dev.caravan.csi.peer.PeerSettings;
import dev.caravan.csi.peer.Peering;
import dev.caravan.csi.server.CsiServer;
import dev.caravan.csi.backend.VolumeLocks;
import dev.caravan.csi.service.ControllerService;
import dev.caravan.csi.service.IdentityService;
import dev.caravan.csi.service.NodeService;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * A running Caravan plugin: backend, node journal and engine, the three CSI services and the server
 * on its socket. Used by {@code caravan serve}, {@code caravan demo} and the tests.
 */
public final class Plugin implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Plugin.class.getName());

  /**
   * How to run a plugin.
   *
   * @param journalDir where the node journal lives (by default {@code <dataDir>/node})
   * @param maxVolumes NodeGetInfo's max_volumes_per_node (0 = unlimited)
   * @param allowedRoots the directories below which the node service stages and publishes; empty for
   *     the default that the socket implies ({@link AllowedRoots#defaultFor})
   * @param keyCosts what the keys of encrypted volumes made from now on cost ({@code --luks-iter-time},
   *     {@code --zfs-pbkdf2-iters})
   */
  public record Settings(
      String driver, Path socket, String nodeId, Path dataDir, Path journalDir, String pluginName,
      long maxVolumes, Map<String, String> options, ObserveSettings observe, List<Path> allowedRoots,
      KeyCosts keyCosts) {
    public Settings {
      options = Map.copyOf(options);
      allowedRoots = List.copyOf(allowedRoots);
      Objects.requireNonNull(keyCosts, "keyCosts");
    }

    /** With the default allowed roots and key costs. */
    public Settings(
        String driver, Path socket, String nodeId, Path dataDir, Path journalDir, String pluginName,
        long maxVolumes, Map<String, String> options, ObserveSettings observe) {
      this(driver, socket, nodeId, dataDir, journalDir, pluginName, maxVolumes, options, observe, List.of(),
          KeyCosts.DEFAULT);
    }

    /** Without the observe HTTP server and metrics. */
    public Settings(
        String driver, Path socket, String nodeId, Path dataDir, Path journalDir, String pluginName,
        long maxVolumes, Map<String, String> options) {
      this(driver, socket, nodeId, dataDir, journalDir, pluginName, maxVolumes, options, ObserveSettings.off());
    }

    public static Settings of(String driver, Path socket, String nodeId, Path dataDir) {
      return new Settings(driver, socket, nodeId, dataDir, dataDir.resolve("node"),
          IdentityService.defaultName(driver), 0, Map.of());
    }

    public Settings withObserve(ObserveSettings o) {
      return new Settings(driver, socket, nodeId, dataDir, journalDir, pluginName, maxVolumes, options, o,
          allowedRoots, keyCosts);
    }

    /** These roots instead of the default that the socket implies; an empty list restores the default. */
    public Settings withAllowedRoots(List<Path> roots) {
      return new Settings(driver, socket, nodeId, dataDir, journalDir, pluginName, maxVolumes, options, observe,
          roots, keyCosts);
    }

    /** The cost of the keys of encrypted volumes made from now on ({@code --luks-iter-time}, ...). */
    public Settings withKeyCosts(KeyCosts costs) {
      return new Settings(driver, socket, nodeId, dataDir, journalDir, pluginName, maxVolumes, options, observe,
          allowedRoots, costs);
    }

    /** The allowed roots the plugin uses: the configured ones, else the default for the socket. */
    public List<Path> effectiveAllowedRoots() {
      return allowedRoots.isEmpty() ? AllowedRoots.defaultFor(socket) : allowedRoots;
    }
  }

  private final Backend backend;
  private final CsiServer server;
  private final NodeEngine engine;
  private final Observability observability;
  private final VolumeLocks locks;
  private final AutoCloseable sweeper;
  private final Optional<Peering> peering;

  private Plugin(Backend backend, CsiServer server, NodeEngine engine, Observability observability, VolumeLocks locks,
      AutoCloseable sweeper, Optional<Peering> peering) {
    this.backend = backend;
    this.server = server;
    this.engine = engine;
    this.observability = observability;
    this.locks = locks;
    this.sweeper = sweeper;
    this.peering = peering;
  }

  /** With the leaked-session sweeper at its defaults ({@link IscsiGc#DEFAULT}: on, for the qnap driver). */
  public static Plugin start(Settings s) throws IOException {
    return start(s, IscsiGc.DEFAULT);
  }

  public static Plugin start(Settings s, IscsiGc iscsiGc) throws IOException {
    return start(s, iscsiGc, Optional.empty());
  }

  /**
   * Starts a plugin, alone or as one node of a multi-node plugin.
   *
   * @param peers with peers, controller calls run on the node that owns their volume (reached through
   *     the peer endpoint this starts), and the file backend's ids name their node; without, the plugin
   *     serves its own node alone
   */
  public static Plugin start(Settings s, IscsiGc iscsiGc, Optional<PeerSettings> peers) throws IOException {
    // Before anything is opened: a peer certificate that cannot work stops the start, naming the rule and file.
    peers.ifPresent(p -> PeerCredentialChecks.requireUsable(p, s.nodeId()));
    AllowedRoots roots = AllowedRoots.of(s.effectiveAllowedRoots());
    // The journal first: the backend asks it what this node has staged and published.
    NodeJournal journal = NodeJournal.open(s.journalDir());
    Map<String, String> options = new HashMap<>(s.options());
    if (peers.isPresent() && s.driver().equals("file")) {
      options.putIfAbsent(FileBackend.NODE_SCOPED_IDS, "true");
    }
    Backend backend = Backends.open(
        s.driver(), new BackendConfig(s.nodeId(), s.dataDir(), options, journal.usage(), s.keyCosts()));
    Observability observability = null;
    AutoCloseable sweeper = () -> {};
    Peering peering = null;
    try {
      observability = Observability.create(s.driver(), s.nodeId(), s.observe(), backend, journal);
      NodeEngine engine = new NodeEngine(backend.node(), journal, observability.nodeObserver(), Optional.of(roots));
      LOG.log(System.Logger.Level.INFO, "node: staging and publishing only below {0}", roots);
      List<String> findings = engine.reconcile();
      LOG.log(System.Logger.Level.INFO, "node journal: {0} volume(s) on this node, {1} finding(s)",
          engine.journal().all().size(), findings.size());
      findings.forEach(f -> LOG.log(System.Logger.Level.WARNING, "reconcile: {0}", f));
      VolumeLocks locks = new VolumeLocks();
      ControllerBackend controller = observability.controller(backend);
      // Everything else is bound first: the CSI socket is what tells the CO the plugin is up (it probes
      // as soon as the socket appears), so a plugin that cannot serve its HTTP port must never open it.
      observability.start(controller);
      // Its first sweep comes one interval later, with the services up; it shares their locks. Only a
      // qnap node has sessions to sweep: the others never load the sweeper's classes.
      sweeper = s.driver().equals("qnap")
          ? IscsiSweeperService.start(iscsiGc, s.options(), journal, controller, locks, observability.metrics())
          : () -> {};
      ControllerService localController = new ControllerService(controller, locks, s.nodeId());
      if (peers.isPresent()) {
        peering = Peering.start(peers.get(), s.nodeId(), localController, backend.controller(),
            s.dataDir().resolve("peer"), observability.inspector()::ownLayers, observability.metrics());
        // The inspector starts before the peer endpoint (which serves the inspector's own layers).
        observability.inspector().askPeers(peering.nodes());
        observability.inspector().seeReplicas(peering.replicas());
      }
      CsiServer server = CsiServer.start(s.socket(), List.of(
          new IdentityService(s.pluginName(), backend),
          peering != null ? peering.controller() : localController,
          new NodeService(engine, controller, locks, roots, s.nodeId(), s.maxVolumes())), observability.interceptors(),
          backend.answersWithoutWaiting() ? CsiServer.STORAGE_READS : Set.of());
      return new Plugin(backend, server, engine, observability, locks, sweeper, Optional.ofNullable(peering));
    } catch (IOException | RuntimeException e) {
      if (peering != null) {
        peering.close();
      }
      close(sweeper);
      if (observability != null) {
        observability.close();
      }
      backend.close();
      throw e;
    }
  }

  public Path socket() {
    return server.socket();
  }

  public Backend backend() {
    return backend;
  }

  public NodeEngine engine() {
    return engine;
  }

  /** The per-object locks the services share (tests hold one to see the calls that contend for it). */
  public VolumeLocks locks() {
    return locks;
  }

  /** The peer endpoint and routing, when the plugin has peers. */
  public Optional<Peering> peering() {
    return peering;
  }

  /** Usage collector, metrics and the observe HTTP server. */
  public Observability observability() {
    return observability;
  }

  public void awaitTermination() throws InterruptedException {
    server.awaitTermination();
  }

  /** Drains in-flight calls (bounded), removes the socket. Mounts and devices stay as they are. */
  public void shutdown(Duration drain) {
    try {
      server.shutdown(drain);
    } finally {
      peering.ifPresent(Peering::close);
      close(sweeper);
      observability.close();
      backend.close();
    }
  }

  private static void close(AutoCloseable sweeper) {
    try {
      sweeper.close();
    } catch (Exception e) {
      LOG.log(System.Logger.Level.WARNING, "cannot stop the iscsi sweeper", e);
    }
  }

  @Override
  public void close() {
    shutdown(Duration.ofSeconds(5));
  }
}
