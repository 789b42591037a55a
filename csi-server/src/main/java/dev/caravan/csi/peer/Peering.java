package dev.caravan.csi.peer;

import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.Replication;
import dev.caravan.csi.observe.inspect.PeerNodes;
import dev.caravan.csi.observe.inspect.Replicas;
import dev.caravan.csi.observe.metrics.Metrics;
import dev.caravan.csi.peer.v1.NodeLayersAnswer;
import dev.caravan.csi.peer.v1.NodeLayersCall;
import dev.caravan.csi.service.ControllerService;
import io.grpc.BindableService;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Clock;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * This node's part in a multi-node plugin: its peer endpoint, its connections to the other nodes,
 * and the controller service that routes each call to the node that owns its volume.
 */
public final class Peering implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Peering.class.getName());

  private final PeerServer server;
  private final PeerClients clients;
  private final RoutingControllerService controller;
  private final ControllerBackend backend;
  private final HomeAuthority authority;
  private final ScheduledExecutorService watcher;
  private final Optional<Replicator> replicator;
  private final Optional<ReplicationScheduler> scheduler;
  private final Replicas replicas;

  private Peering(PeerServer server, PeerClients clients, RoutingControllerService controller,
      ControllerBackend backend, HomeAuthority authority, ScheduledExecutorService watcher, String self) {
    this.replicator = controller.replicator();
    this.scheduler = controller.scheduler();
    this.server = server;
    this.clients = clients;
    this.controller = controller;
    this.backend = backend;
    this.authority = authority;
    this.watcher = watcher;
    this.replicas = new ReplicaView(backend, self, scheduler);
  }

  /**
   * How often the credential files are looked at without a handshake or call: a change closes the
   * connections made under the old files even while no peer calls.
   */
  static final Duration WATCH = Duration.ofSeconds(5);

  /**
   * Starts the peer endpoint.
   *
   * @param local the controller service of this node's own storage
   * @param backend this node's controller backend, unwrapped: who owns an id, capacity, names
   * @param stateDir where this node keeps what it must remember across restarts as a name's home
   *     ({@link NameClaims}, its view generation): a directory of the plugin's data directory
   * @param nodeLayers this node's own node-side layers of a volume, for the other nodes' inspectors
   * @param metrics where refusals and the certificate's expiry are counted
   */
  public static Peering start(PeerSettings s, String self, ControllerService local, ControllerBackend backend,
      Path stateDir, Function<String, NodeLayersAnswer> nodeLayers, Metrics metrics) throws IOException {
    CredentialFiles files = CredentialFiles.open(s.cert(), s.key(), s.ca());
    metrics.peerCertificateExpiry(() -> files.current().chain().getFirst().getNotAfter().toInstant());
    RefusalLog refusals = new RefusalLog(self, metrics, Clock.systemUTC());
    PeerClients clients = new PeerClients(s.peers(), files, s.timeout(), refusals);
    NameClaims claims = new NameClaims(claimsDir(stateDir));
    NameLocks locks = new NameLocks(s.timeout());
    HomeAuthority authority = new HomeAuthority(self, clients, backend, claims, locks, stateDir);
    RoutingControllerService controller = new RoutingControllerService(local, backend, self, s.reserveBytes(), clients,
        claims, locks, authority);
    PeerServer server;
    try {
      server = PeerServer.start(s.listen(), files, s.peers(),
          new PeerService(local, backend, self, s.reserveBytes(), controller, authority, nodeLayers),
          refusals);
    } catch (IOException | RuntimeException e) {
      authority.close();
      clients.close();
      throw e;
    }
    authority.start();
    ScheduledExecutorService watcher = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "caravan-peer-credentials");
      t.setDaemon(true);
      return t;
    });
    // files::current notices a change itself and logs what it cannot read: nothing to collect from the future.
    ScheduledFuture<?> unused =
        watcher.scheduleWithFixedDelay(files::current, WATCH.toMillis(), WATCH.toMillis(), TimeUnit.MILLISECONDS);
    LOG.log(System.Logger.Level.INFO, "peer endpoint of node {0} on {1} (mTLS); peers: {2}", self, s.listen(),
        s.peers());
    Peering peering = new Peering(server, clients, controller, backend, authority, watcher, self);
    backend.replication().ifPresent(Replication::attach);
    peering.scheduler.ifPresent(r -> {
      r.observe(metrics);
      r.start();
    });
    return peering;
  }

  /**
   * The claims' directory; the records an earlier version kept in {@code placing} (creates not yet
   * answered for sure) are claims too, and move there.
   */
  private static Path claimsDir(Path stateDir) throws IOException {
    Path claims = stateDir.resolve("claims");
    Path placing = stateDir.resolve("placing");
    if (!Files.exists(claims) && Files.isDirectory(placing)) {
      Files.move(placing, claims, StandardCopyOption.ATOMIC_MOVE);
    }
    return claims;
  }

  /** The other nodes' plugins, for the claim-chain inspector: each asked with {@link PeerNodes#DEADLINE}. */
  public PeerNodes nodes() {
    return new PeerNodes() {
      @Override
      public Optional<String> owner(String volumeId) {
        return Routing.ownerIfOurs(backend, volumeId, true);
      }

      @Override
      public NodeLayersAnswer layers(String node, String volumeId) {
        return clients.client(node).call("Its plugin may be down, or the node itself.", (stub, key) ->
            stub.withDeadlineAfter(DEADLINE.toMillis(), TimeUnit.MILLISECONDS)
                .nodeLayers(NodeLayersCall.newBuilder().setIdempotencyKey(key).setVolumeId(volumeId).build()));
      }
    };
  }

  /** This node's replicated volumes and the copies it holds, for the claim-chain inspector. */
  public Replicas replicas() {
    return replicas;
  }

  /** This node's replication scheduler, when its backend replicates. */
  Optional<ReplicationScheduler> scheduler() {
    return scheduler;
  }

  /** This node's replication sender, when its backend replicates. */
  Optional<Replicator> replicator() {
    return replicator;
  }

  /** The controller service to serve on the CSI socket instead of the local one. */
  public BindableService controller() {
    return controller;
  }

  /** The port the peer endpoint listens on (the configured one, or the one chosen for port 0). */
  public int port() {
    return server.port();
  }

  @Override
  public void close() {
    watcher.shutdownNow();
    authority.close();
    controller.close();
    clients.close();
    server.close();
  }
}
