package dev.caravan.csi.peer;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.testing.PluginJvm;
import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.iscsi.IscsiGc;
import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.nomad.NomadClient;
import dev.caravan.csi.support.CrashPoints;
import dev.caravan.csi.server.CsiServer;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.observe.metrics.PrometheusMetrics;
import dev.caravan.storage.testing.LoopbackPorts;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import java.util.stream.Stream;

/**
 * Plugin instances in this JVM, one per node id, each with its own data directory, storage (the file
 * backend's data directory unless a {@link Storage} says otherwise), CSI unix socket, certificate from
 * one throwaway CA, and peer endpoint on a loopback port; every node lists the others as static peers.
 */
final class PeerCluster implements AutoCloseable {
  /** The backend each node runs: its driver, and its options for a node (its own pool, say). */
  interface Storage {
    String driver();

    Map<String, String> options(Node node);

    /** How long a node waits for a peer's answer. */
    default Duration peerTimeout() {
      return Duration.ofSeconds(10);
    }
  }

  /** The file backend, its images below each node's data directory. */
  static final Storage FILE = new Storage() {
    @Override
    public String driver() {
      return "file";
    }

    @Override
    public Map<String, String> options(Node node) {
      return Map.of();
    }
  };

  /** One node: where its things live, and, while it runs, its plugin and a CSI client on its socket. */
  static final class Node {
    final String id;
    final Path dir;
    final int port;
    final long reserve;
    Plugin plugin;
    /** The node's plugin when it runs as a JVM of its own ({@link #startProcess}). */
    Process process;
    UnixChannel channel;
    ControllerGrpc.ControllerBlockingStub csi;

    Node(String id, Path dir, int port, long reserve) {
      this.id = id;
      this.dir = dir;
      this.port = port;
      this.reserve = reserve;
    }

    Path data() {
      return dir.resolve("data");
    }

    Path tls() {
      return dir.resolve("tls");
    }

    /** On the file backend: the image of {@code volumeId}, a volume this node owns. */
    Path fileImage(String volumeId) {
      return data().resolve("volumes").resolve(volumeId + ".img");
    }

    /** On the file backend: the owner's replication directory of {@code volumeId} (settings, points). */
    Path fileReplicationDir(String volumeId) {
      return data().resolve("replication").resolve(volumeId);
    }

    /** On the file backend: this node's replica directory of {@code volumeId}, by FileReplication's rule. */
    Path fileReplicaDir(String volumeId) {
      return data().resolve("replicas").resolve("rep-" + dev.caravan.csi.backend.IdRules.nameHash(volumeId));
    }

    PeerAddress address() {
      return new PeerAddress("127.0.0.1", port);
    }
  }

  final Path work;
  final PeerCa ca;
  final Map<String, Node> nodes = new LinkedHashMap<>();
  /** Each node's peer set, from its id and the other nodes' addresses (static by default). */
  BiFunction<String, Map<String, PeerAddress>, PeerSet> peerSets = (self, others) -> new StaticPeers(others);
  private final Storage storage;
  private Optional<NomadClient> nomad = Optional.empty();

  private PeerCluster(Path work, PeerCa ca, Storage storage) {
    this.work = work;
    this.ca = ca;
    this.storage = storage;
  }

  /**
   * Peer sets that leave out the nodes in {@code lost}, read at every call, as discovery drops a node
   * that is gone: a test loses a node by adding it there.
   */
  static BiFunction<String, Map<String, PeerAddress>, PeerSet> leavingOut(Set<String> lost) {
    return (self, others) -> () -> {
      Map<String, PeerAddress> seen = new LinkedHashMap<>(others);
      seen.keySet().removeAll(lost);
      return seen;
    };
  }

  /** Starts a node per entry of {@code reserves} (node id → placement reserve in bytes). */
  static PeerCluster start(Map<String, Long> reserves) throws Exception {
    return start(reserves, (self, others) -> new StaticPeers(others));
  }

  static PeerCluster start(Map<String, Long> reserves, BiFunction<String, Map<String, PeerAddress>, PeerSet> peerSets)
      throws Exception {
    return start(reserves, peerSets, FILE);
  }

  static PeerCluster start(Map<String, Long> reserves, BiFunction<String, Map<String, PeerAddress>, PeerSet> peerSets,
      Storage storage) throws Exception {
    return start(reserves, peerSets, storage, Optional.empty());
  }

  /** With {@code nomad}, every node's inspector reads Nomad's task API (a plugin running as a Nomad task). */
  static PeerCluster start(Map<String, Long> reserves, BiFunction<String, Map<String, PeerAddress>, PeerSet> peerSets,
      Storage storage, Optional<NomadClient> nomad) throws Exception {
    PeerCluster c = new PeerCluster(Files.createTempDirectory("caravan-peers-"), new PeerCa("caravan test peer CA"),
        storage);
    c.nomad = nomad;
    for (Map.Entry<String, Long> e : reserves.entrySet()) {
      Node n = new Node(e.getKey(), c.work.resolve(e.getKey()), LoopbackPorts.unused(), e.getValue());
      PeerCa.write(n.tls(), c.ca.issue(n.id), c.ca.cert);
      c.nodes.put(n.id, n);
    }
    c.peerSets = peerSets;
    for (Node n : c.nodes.values()) {
      c.startNode(n.id);
    }
    return c;
  }

  static PeerCluster start(String... ids) throws Exception {
    Map<String, Long> reserves = new LinkedHashMap<>();
    for (String id : ids) {
      reserves.put(id, 0L);
    }
    return start(reserves);
  }

  Node node(String id) {
    return nodes.get(id);
  }

  ControllerGrpc.ControllerBlockingStub csi(String id) {
    return nodes.get(id).csi;
  }

  void startNode(String id) throws IOException {
    Node n = nodes.get(id);
    Map<String, PeerAddress> others = new LinkedHashMap<>();
    nodes.values().stream().filter(o -> !o.id.equals(id)).forEach(o -> others.put(o.id, o.address()));
    Path socket = n.dir.resolve("csi.sock");
    PeerSettings peers = new PeerSettings(n.address(), n.tls().resolve("cert.pem"), n.tls().resolve("key.pem"),
        n.tls().resolve("ca.pem"), peerSets.apply(id, others), n.reserve, storage.peerTimeout());
    Plugin.Settings base = Plugin.Settings.of(storage.driver(), socket, id, n.data());
    Plugin.Settings settings = new Plugin.Settings(base.driver(), base.socket(), base.nodeId(), base.dataDir(),
        base.journalDir(), base.pluginName(), base.maxVolumes(), storage.options(n))
        .withAllowedRoots(List.of(work)) // a test stages and publishes below the cluster's directory
        .withObserve(ObserveSettings.off().withNomad(nomad).withMetrics(true));
    n.plugin = Plugin.start(settings, IscsiGc.DEFAULT, Optional.of(peers));
    n.channel = new UnixChannel(socket);
    n.csi = ControllerGrpc.newBlockingStub(n.channel.channel());
  }

  /**
   * Starts {@code id} as a {@code caravan serve} process with the same settings, given on its command
   * line as an operator would, so that a test can kill it; with {@code crashAt}, it dies the moment
   * it reaches that {@link CrashPoints crash point}.
   */
  void startProcess(String id, Optional<String> crashAt) throws IOException, InterruptedException {
    Node n = nodes.get(id);
    Path socket = n.dir.resolve("csi.sock");
    List<String> command = new ArrayList<>(PluginJvm.java());
    crashAt.ifPresent(step -> command.add("-D" + CrashPoints.PROPERTY + "=" + step));
    command.add("dev.caravan.csi.cli.Main");
    command.addAll(List.of("serve", "--http-listen=off", "--driver=" + storage.driver(), "--endpoint",
        "unix://" + socket, "--node-id", id, "--data-dir", n.data().toString(), "--journal-dir", n.data().resolve("node").toString(),
        "--peer-listen", n.address().toString(), "--peer-tls-cert", n.tls().resolve("cert.pem").toString(),
        "--peer-tls-key", n.tls().resolve("key.pem").toString(), "--peer-tls-ca", n.tls().resolve("ca.pem").toString(),
        "--placement-reserve", Long.toString(n.reserve)));
    nodes.values().stream().filter(o -> !o.id.equals(id))
        .forEach(o -> command.addAll(List.of("--peer", o.id + "=" + o.address())));
    if (!storage.options(n).isEmpty()) {
      // Backend options are read from a config file, as an operator gives them.
      StringBuilder properties = new StringBuilder();
      storage.options(n).forEach((k, v) -> properties.append(storage.driver()).append('.').append(k).append('=')
          .append(v).append('\n'));
      Path config = Files.writeString(n.dir.resolve("caravan.properties"), properties);
      command.addAll(List.of("--config", config.toString()));
    }
    Path log = n.dir.resolve("plugin.log");
    n.process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
    while (!CsiServer.isLive(socket)) {
      if (!n.process.isAlive() || System.nanoTime() > deadline) {
        n.process.destroyForcibly();
        throw new AssertionError("plugin process of node " + id + " did not come up: " + Files.readString(log));
      }
      Thread.sleep(50);
    }
    n.channel = new UnixChannel(socket);
    n.csi = ControllerGrpc.newBlockingStub(n.channel.channel());
  }

  /** Waits for {@code id}'s process to end (it reached its crash point); its exit status. */
  int awaitExit(String id) throws InterruptedException {
    Node n = nodes.get(id);
    if (!n.process.waitFor(60, TimeUnit.SECONDS)) {
      throw new AssertionError("plugin process of node " + id + " is still running");
    }
    closeChannel(n);
    int status = n.process.exitValue();
    n.process = null;
    return status;
  }

  void stopNode(String id) {
    Node n = nodes.get(id);
    closeChannel(n);
    if (n.plugin != null) {
      n.plugin.shutdown(Duration.ofSeconds(2));
      n.plugin = null;
    }
    if (n.process != null) {
      n.process.destroyForcibly();
      try {
        n.process.waitFor(20, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      n.process = null;
    }
  }

  private static void closeChannel(Node n) {
    if (n.channel != null) {
      n.channel.close();
      n.channel = null;
    }
  }

  /** The value of the sample {@code name{labels}} in {@code id}'s metrics; 0 when there is none yet. */
  double metric(String id, String name, String labels) throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ((PrometheusMetrics) nodes.get(id).plugin.observability().metrics()).write(out);
    String prefix = name + "{" + labels + "} ";
    return out.toString(StandardCharsets.UTF_8).lines().filter(l -> l.startsWith(prefix))
        .mapToDouble(l -> Double.parseDouble(l.substring(prefix.length()).strip())).findFirst().orElse(0);
  }

  /** The names in {@code dir}, sorted; none when it does not exist (or went away while it was read). */
  static List<String> list(Path dir) {
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).sorted().toList();
    } catch (java.nio.file.NoSuchFileException gone) {
      return List.of();
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The files of {@code id}'s data directory below {@code sub} ("volumes", "snapshots"). */
  List<String> files(String id, String sub) throws IOException {
    return list(nodes.get(id).data().resolve(sub));
  }


  @Override
  public void close() throws IOException {
    nodes.keySet().forEach(this::stopNode);
    try (Stream<Path> paths = Files.walk(work)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }
}
