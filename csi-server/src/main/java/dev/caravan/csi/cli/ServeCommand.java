package dev.caravan.csi.cli;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.backend.Backends;
import dev.caravan.csi.iscsi.IscsiGc;
import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.observe.nomad.NomadClient;
import dev.caravan.csi.peer.PeerFlags;
import dev.caravan.csi.peer.PeerSettings;
import dev.caravan.csi.observe.stats.UsageCollector;
import dev.caravan.csi.server.Endpoint;
import dev.caravan.csi.service.IdentityService;
import java.io.IOException;
import java.io.Reader;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code caravan serve}: runs the plugin until SIGTERM/SIGINT. Each setting comes from the flag, else
 * the environment (CSI_ENDPOINT, CSI_NODE_ID), else the {@code --config} properties file, else the
 * default.
 */
@Command(name = "serve", description = "Run the CSI plugin on a unix socket.")
final class ServeCommand implements Callable<Integer> {
  private static final System.Logger LOG = System.getLogger(ServeCommand.class.getName());
  private static final Set<String> CONFIG_KEYS =
      Set.of("driver", "endpoint", "node-id", "data-dir", "plugin-name", "max-volumes", "drain-timeout-seconds",
          "http-listen", "http-token-file", "http-tls-cert", "http-tls-key", "http-tls-client-ca", "metrics",
          "allowed-roots", "iscsi-gc", "iscsi-gc-interval-seconds", "iscsi-gc-grace-seconds");

  @Option(names = "--driver", description = "Backend: file, local or qnap (default: file). qnap: iSCSI LUNs on a"
      + " QNAP appliance, ControllerPublish as the fence, and the node side through open-iscsi (iscsid) and"
      + " multipathd, which must run on the node; its node id must be the node's iSCSI initiator IQN."
      + " Its settings are qnap.* keys of --config; credentials come from qnap.credentials-file or"
      + " CARAVAN_QNAP_USER/CARAVAN_QNAP_PASSWORD, never from flags.")
  String driver;

  @Option(names = "--endpoint", description = "unix:///path/csi.sock (default: $CSI_ENDPOINT).")
  String endpoint;

  @Option(names = "--node-id", description = "CSI node id (default: $CSI_NODE_ID, else the hostname).")
  String nodeId;

  @Option(names = "--data-dir", description = "State directory (default: /var/lib/caravan/<driver>).")
  Path dataDir;

  @Option(names = "--plugin-name", description = "GetPluginInfo name (default: caravan.csi.<driver>).")
  String pluginName;

  @Option(names = "--allowed-root", paramLabel = "DIR",
      description = "A directory below which NodeStage/NodePublish paths may lie; repeatable. Default: <state_dir>/csi"
          + " when the endpoint has Nomad's host layout (<state_dir>/csi/plugins/<alloc-id>/csi.sock), else"
          + " /local/csi (Nomad's stage_publish_base_dir inside a task).")
  List<Path> allowedRoots = new ArrayList<>();

  @Option(names = "--max-volumes", description = "max_volumes_per_node reported to the CO (default: 0 = unlimited).")
  Long maxVolumes;

  @Option(names = "--drain-timeout", description = "How long SIGTERM waits for in-flight calls, in seconds (default: 10).")
  Long drainSeconds;

  @Option(names = "--http-listen", description = "HOST:PORT of the usage/metrics/inspector HTTP server, or 'off'"
      + " (default: 127.0.0.1:9633). A non-loopback address needs --http-token-file or mTLS.")
  String httpListen;

  @Option(names = "--http-token-file", description = "File holding the bearer token every HTTP request must carry.")
  Path httpTokenFile;

  @Option(names = "--http-tls-cert", description = "PEM certificate (chain) for HTTPS.")
  Path httpTlsCert;

  @Option(names = "--http-tls-key", description = "PEM PKCS#8 private key for HTTPS.")
  Path httpTlsKey;

  @Option(names = "--http-tls-client-ca", description = "PEM CA that HTTPS clients' certificates must chain to (mTLS).")
  Path httpTlsClientCa;

  @Option(names = "--metrics", arity = "1", description = "Instrument RPCs and operations for /metrics (default: true).")
  Boolean metrics;

  @Option(names = "--iscsi-gc", paramLabel = "on|off", description = "qnap only: the leaked-session sweeper, which"
      + " logs out (never deletes) an iSCSI session to a qnap.portals portal and a Caravan target that no journal"
      + " record, mount or holder uses, once two sweeps iscsi-gc-grace-seconds apart found it so (default: on;"
      + " --config keys iscsi-gc-interval-seconds, default 60, and iscsi-gc-grace-seconds, default 300).")
  String iscsiGc;

  @Option(names = "--peer-listen", paramLabel = "HOST:PORT", description = "Serve this node's peer endpoint here"
      + " (mTLS only): with peers, controller calls for a volume run on the node that holds it, and host=auto"
      + " places new volumes (file and local drivers). Off by default: the plugin serves its own node alone.")
  String peerListen;

  @Option(names = "--peer", paramLabel = "NODE=HOST:PORT", description = "Another node's peer endpoint; repeatable."
      + " Every node lists the others (its own entry is ignored).")
  List<String> peers = new ArrayList<>();

  @Option(names = "--peer-service", paramLabel = "NAME", description = "Find the peers through Nomad instead of"
      + " --peer: the registrations of this Nomad service (provider nomad; each tagged caravan-node=<node id>), read"
      + " through the task API socket with the task's workload identity (ACL: namespace read-job), every 30 s.")
  String peerService;

  @Option(names = "--peer-tls-cert", description = "PEM certificate (chain) of this node for the peer endpoint;"
      + " its subjectAltName must hold the node id as a DNS name. Re-read when it changes.")
  Path peerTlsCert;

  @Option(names = "--peer-tls-key", description = "PEM PKCS#8 private key of --peer-tls-cert. Re-read when it changes.")
  Path peerTlsKey;

  @Option(names = "--peer-tls-ca", description = "PEM CA certificate(s) every peer's certificate must chain to."
      + " Re-read when it changes.")
  Path peerTlsCa;

  @Option(names = "--placement-reserve", paramLabel = "SIZE", description = "Free space host=auto keeps back on"
      + " this node, e.g. 10GiB (default: 0).")
  String placementReserve;

  @Option(names = "--config", description = "Properties file with any of: " + "driver, endpoint, node-id, data-dir, plugin-name, max-volumes, drain-timeout-seconds, allowed-roots (comma-separated), iscsi-gc, iscsi-gc-interval-seconds, iscsi-gc-grace-seconds, and <driver>.* backend options (e.g. qnap.url, qnap.portals).")
  Path config;

  @Override
  public Integer call() throws IOException, InterruptedException {
    Map<String, String> file;
    try {
      file = config == null ? Map.of() : readConfig(config);
    } catch (IOException e) {
      System.err.println("caravan: " + e.getMessage());
      return 2;
    }
    String drv = first(driver, null, file.get("driver"), "file");
    if (!Backends.DRIVERS.contains(drv)) {
      System.err.println("caravan: unknown driver '" + drv + "'; known drivers: " + String.join(", ", Backends.DRIVERS));
      return 2;
    }
    String ep = first(endpoint, System.getenv(Endpoint.ENV), file.get("endpoint"), null);
    Path socket;
    try {
      socket = Endpoint.parse(ep);
    } catch (IllegalArgumentException e) {
      System.err.println("caravan: " + e.getMessage());
      return 2;
    }
    String node = first(nodeId, System.getenv("CSI_NODE_ID"), file.get("node-id"), hostname());
    Path data = dataDir != null ? dataDir : Path.of(first(null, null, file.get("data-dir"), "/var/lib/caravan/" + drv));
    String name = first(pluginName, null, file.get("plugin-name"), IdentityService.defaultName(drv));
    long max = maxVolumes != null ? maxVolumes : Long.parseLong(first(null, null, file.get("max-volumes"), "0"));
    long drain = drainSeconds != null ? drainSeconds : Long.parseLong(first(null, null, file.get("drain-timeout-seconds"), "10"));
    Map<String, String> options = new HashMap<>();
    file.forEach((k, v) -> {
      if (k.startsWith(drv + ".")) {
        options.put(k.substring(drv.length() + 1), v);
      }
    });

    ObserveSettings observe;
    try {
      observe = observeSettings(file);
    } catch (IllegalArgumentException | IOException e) {
      System.err.println("caravan: " + e.getMessage());
      return 2;
    }
    IscsiGc gc;
    try {
      gc = IscsiGc.parse(iscsiGc, file);
    } catch (IllegalArgumentException e) {
      System.err.println("caravan: " + e.getMessage());
      return 2;
    }
    List<Path> roots = new ArrayList<>(allowedRoots);
    if (roots.isEmpty() && file.containsKey("allowed-roots")) {
      for (String r : file.get("allowed-roots").split(",", -1)) {
        if (!r.isBlank()) {
          roots.add(Path.of(r.trim()));
        }
      }
    }
    Optional<PeerSettings> peering;
    try {
      peering = PeerFlags.parse(drv, node, peerListen, peers, peerService, System.getenv(), peerTlsCert, peerTlsKey,
          peerTlsCa, placementReserve);
    } catch (IllegalArgumentException e) {
      System.err.println("caravan: " + e.getMessage());
      return 2;
    }
    Plugin plugin;
    try {
      plugin = Plugin.start(new Plugin.Settings(drv, socket, node, data, data.resolve("node"), name, max, options, observe)
          .withAllowedRoots(roots), gc, peering);
    } catch (IllegalArgumentException | IllegalStateException | IOException e) {
      System.err.println("caravan: cannot start: " + e.getMessage());
      return 1;
    }
    LOG.log(System.Logger.Level.INFO, "caravan serving driver={0} node={1} data={2} name={3}", drv, node, data, name);
    Thread hook = new Thread(() -> {
      LOG.log(System.Logger.Level.INFO, "signal received: draining (up to {0}s)", drain);
      plugin.shutdown(Duration.ofSeconds(drain));
    }, "caravan-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
    plugin.awaitTermination();
    return 0;
  }

  private ObserveSettings observeSettings(Map<String, String> file) throws IOException {
    boolean metricsOn = metrics != null ? metrics : Boolean.parseBoolean(first(null, null, file.get("metrics"), "true"));
    String listen = first(httpListen, null, file.get("http-listen"),
        HttpSettings.DEFAULT_HOST + ":" + HttpSettings.DEFAULT_PORT);
    Optional<NomadClient> nomad = NomadClient.fromEnvironment(System.getenv());
    if (listen.equals("off")) {
      return new ObserveSettings(metricsOn, Optional.empty(), UsageCollector.Settings.defaults(), nomad);
    }
    HttpSettings http = HttpSettings.parseListen(listen)
        .withToken(path(httpTokenFile, file.get("http-token-file")))
        .withTls(path(httpTlsCert, file.get("http-tls-cert")), path(httpTlsKey, file.get("http-tls-key")),
            path(httpTlsClientCa, file.get("http-tls-client-ca")));
    http.check();
    return new ObserveSettings(metricsOn, Optional.of(http), UsageCollector.Settings.defaults(), nomad);
  }

  private static Optional<Path> path(Path flag, String file) {
    return flag != null ? Optional.of(flag) : Optional.ofNullable(file).filter(f -> !f.isEmpty()).map(Path::of);
  }

  private static Map<String, String> readConfig(Path file) throws IOException {
    Properties p = new Properties();
    try (Reader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      p.load(r);
    }
    Map<String, String> out = new HashMap<>();
    Set<String> unknown = new TreeSet<>();
    for (String key : p.stringPropertyNames()) {
      boolean backendKey = Backends.DRIVERS.stream().anyMatch(d -> key.startsWith(d + "."));
      if (!CONFIG_KEYS.contains(key) && !backendKey) {
        unknown.add(key);
      }
      out.put(key, p.getProperty(key).trim());
    }
    if (!unknown.isEmpty()) {
      throw new IOException("config " + file + " has unknown key(s) " + unknown + "; known: " + new TreeSet<>(CONFIG_KEYS)
          + " and <driver>.*");
    }
    return out;
  }

  private static String first(String flag, String env, String file, String fallback) {
    if (flag != null && !flag.isEmpty()) {
      return flag;
    }
    if (env != null && !env.isEmpty()) {
      return env;
    }
    if (file != null && !file.isEmpty()) {
      return file;
    }
    return fallback;
  }

  private static String hostname() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      return "localhost";
    }
  }
}
