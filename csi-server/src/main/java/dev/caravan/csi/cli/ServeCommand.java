package dev.caravan.csi.cli;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.backend.KeyCosts;
import dev.caravan.csi.drivers.Backends;
import dev.caravan.csi.config.Body;
import dev.caravan.csi.config.ConfigException;
import dev.caravan.csi.config.ConfigFiles;
import dev.caravan.csi.iscsi.IscsiGc;
import dev.caravan.csi.node.JournalPlace;
import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.observe.nomad.NomadClient;
import dev.caravan.csi.observe.stats.UsageCollector;
import dev.caravan.csi.peer.PeerFlags;
import dev.caravan.csi.peer.PeerSettings;
import dev.caravan.csi.server.Endpoint;
import dev.caravan.csi.service.IdentityService;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.crypt.KeySlotCost;
import dev.caravan.storage.iscsi.Iscsi;
import dev.caravan.storage.zfs.Pbkdf2Iters;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * {@code caravan serve}: runs the plugin until SIGTERM/SIGINT. Each setting comes from the flag, else
 * the environment (CSI_ENDPOINT, CSI_NODE_ID), else the {@code --config} file (HCL or JSON; every
 * flag is a key there, see {@link ServeConfig}), else the default.
 */
final class ServeCommand implements Callable<Integer> {
  private static final System.Logger LOG = System.getLogger(ServeCommand.class.getName());
  static final String SUMMARY = "Run the CSI plugin on a unix socket.";
  /** Options the environment sets, which win over the config file (Nomad sets CSI_ENDPOINT). */
  private static final Map<String, String> ENVIRONMENT = Map.of("--endpoint", Endpoint.ENV, "--node-id", "CSI_NODE_ID");

  /** serve's flags: the one definition of its command line, its --help and its config file's keys. */
  static final Flags<ServeCommand> FLAGS = new Flags<>("caravan serve", SUMMARY, List.of(
      Flag.text("--driver", "file|local|qnap", "Backend: file, local or qnap (default: file). qnap: iSCSI LUNs on a"
          + " QNAP appliance, ControllerPublish as the fence, and the node side through open-iscsi (iscsid) and"
          + " multipathd, which must run on the node; its node id must be the node's iSCSI initiator IQN."
          + " Its settings are the qnap { ... } block of --config; credentials come from its credentials_file or"
          + " CARAVAN_QNAP_USER/CARAVAN_QNAP_PASSWORD, never from flags.",
          (c, v) -> c.driver = v),
      Flag.text("--endpoint", "unix:///PATH", "unix:///path/csi.sock (default: $CSI_ENDPOINT).",
          (c, v) -> c.endpoint = v),
      Flag.text("--node-id", "ID", "CSI node id (default: $CSI_NODE_ID, else for qnap this node's iSCSI"
          + " initiator name, which the appliance's ACL admits: --iscsi-iface's iface.initiatorname, else"
          + " /etc/iscsi/initiatorname.iscsi; else the hostname).",
          (c, v) -> c.nodeId = v),
      Flag.text("--iscsi-iface", "NAME", "qnap only: log in through this open-iscsi"
          + " interface, a record in /etc/iscsi/ifaces (iscsiadm -m iface -I NAME -o new), e.g. on a node with several"
          + " NICs or initiator identities; the node id then defaults to its iface.initiatorname (default: iscsid's"
          + " default interface, the host's identity). Same as qnap.iscsi-iface.",
          (c, v) -> c.iscsiIface = v),
      Flag.path("--data-dir", "DIR", "State directory (default: /var/lib/caravan/<driver>).",
          (c, v) -> c.dataDir = v),
      Flag.path("--journal-dir", "DIR", "Where the node journal (what this node has"
          + " staged and published) lives. Default: a directory named after the data directory under /run/caravan when"
          + " that is on a tmpfs (in a container only when /run/caravan is bound in from the host), else"
          + " <data-dir>/node. Records found in the other place are moved here at start.",
          (c, v) -> c.journalDir = v),
      Flag.text("--plugin-name", "NAME", "GetPluginInfo name (default: caravan.csi.<driver>).",
          (c, v) -> c.pluginName = v),
      Flag.paths("--allowed-root", "DIR", "A directory below which NodeStage/NodePublish paths may lie; repeatable. Default: <state_dir>/csi"
          + " when the endpoint has Nomad's host layout (<state_dir>/csi/plugins/<alloc-id>/csi.sock), else"
          + " /local/csi (Nomad's stage_publish_base_dir inside a task).",
          (c, v) -> c.allowedRoots = v),
      Flag.number("--max-volumes", "COUNT", "max_volumes_per_node reported to the CO (default: 0 = unlimited).",
          (c, v) -> c.maxVolumes = v),
      Flag.number("--drain-timeout", "SECONDS", "How long SIGTERM waits for in-flight calls, in seconds (default: 10).",
          (c, v) -> c.drainSeconds = v),
      Flag.text("--http-listen", "HOST:PORT|off", "HOST:PORT of the usage/metrics/inspector HTTP server, or 'off'"
          + " (default: 127.0.0.1:9633). A non-loopback address needs TLS"
          + " (--http-tls-cert, --http-tls-key) and --http-tls-client-ca (mTLS) or --http-token-file.",
          (c, v) -> c.httpListen = v),
      Flag.path("--http-token-file", "FILE", "File holding the bearer token every HTTP request must carry.",
          (c, v) -> c.httpTokenFile = v),
      Flag.path("--http-tls-cert", "FILE", "PEM certificate (chain) for HTTPS.",
          (c, v) -> c.httpTlsCert = v),
      Flag.path("--http-tls-key", "FILE", "PEM private key for HTTPS (PKCS#8, or OpenSSL's RSA/EC form; unencrypted).",
          (c, v) -> c.httpTlsKey = v),
      Flag.path("--http-tls-client-ca", "FILE", "PEM CA that HTTPS clients' certificates must chain to (mTLS).",
          (c, v) -> c.httpTlsClientCa = v),
      Flag.bool("--metrics", "Instrument RPCs and operations for /metrics (default: true).",
          (c, v) -> c.metrics = v),
      Flag.text("--iscsi-gc", "on|off", "qnap only: the leaked-session sweeper, which"
          + " logs out (never deletes) an iSCSI session to a qnap.portals portal and a Caravan target that no journal"
          + " record, mount or holder uses, once two sweeps --iscsi-gc-grace-seconds apart found it so (default: on).",
          (c, v) -> c.iscsiGc = v),
      Flag.text("--peer-listen", "HOST:PORT", "Serve this node's peer endpoint here"
          + " (mTLS only): with peers, controller calls for a volume run on the node that holds it, and host=auto"
          + " places new volumes (file and local drivers). Off by default: the plugin serves its own node alone.",
          (c, v) -> c.peerListen = v),
      Flag.texts("--peer", "NODE=HOST:PORT", "Another node's peer endpoint; repeatable."
          + " Every node lists the others (its own entry is ignored).",
          (c, v) -> c.peers = v),
      Flag.text("--peer-service", "NAME", "Find the peers through Nomad instead of"
          + " --peer: the registrations of this Nomad service (provider nomad; each tagged caravan-node=<node id>), read"
          + " through the task API socket with the task's workload identity (ACL: namespace read-job), every 30 s.",
          (c, v) -> c.peerService = v),
      Flag.path("--peer-tls-cert", "FILE", "PEM certificate (chain) of this node for the peer endpoint;"
          + " its subjectAltName must hold the node id as a DNS name. Re-read when it changes.",
          (c, v) -> c.peerTlsCert = v),
      Flag.path("--peer-tls-key", "FILE", "PEM private key of --peer-tls-cert (PKCS#8, or OpenSSL's RSA/EC"
          + " form; unencrypted). Re-read when it changes.",
          (c, v) -> c.peerTlsKey = v),
      Flag.path("--peer-tls-ca", "FILE", "PEM CA certificate(s) every peer's certificate must chain to."
          + " Re-read when it changes.",
          (c, v) -> c.peerTlsCa = v),
      Flag.text("--placement-reserve", "SIZE", "Free space host=auto keeps back on"
          + " this node, e.g. 10GiB (default: 0).",
          (c, v) -> c.placementReserve = v),
      Flag.number("--luks-iter-time", "MS", "file and qnap: how long, in milliseconds of this node's time, opening"
          + " the LUKS2 key slot of an encrypted volume takes (cryptsetup's --iter-time: argon2id benchmarked to it,"
          + " within --luks-pbkdf-memory), 1 to 60000 (default: 1000). More costs each stage that much time, and each"
          + " guess at the passphrase more. Applies to volumes formatted afterwards (at their first stage); a volume"
          + " keeps what its header records.",
          (c, v) -> c.luksIterTime = v),
      Flag.number("--luks-pbkdf-memory", "KIB", "file and qnap: the most memory, in KiB, the argon2id of a new"
          + " LUKS2 key slot may use (cryptsetup's --pbkdf-memory), 32 to 4194304 (default: 262144, 256 MiB)."
          + " Each stage of the volume, on any node, needs the memory its header records while it opens it: lower it"
          + " on small nodes; less memory makes each guess at the passphrase cheaper. Applies to volumes formatted"
          + " afterwards, and to the key slot a passphrase rotation adds.",
          (c, v) -> c.luksPbkdfMemory = v),
      Flag.number("--zfs-pbkdf2-iters", "COUNT", "local only: the pbkdf2iters of new encrypted volumes (zfs create"
          + " -o pbkdf2iters), PBKDF2 rounds from the passphrase to the wrapping key, " + Pbkdf2Iters.MINIMUM
          + " (OpenZFS's minimum) to " + Pbkdf2Iters.MAXIMUM + " (default: " + Pbkdf2Iters.DEFAULT.count() + ")."
          + " More costs each stage's key load that much work, and each guess at the passphrase more. Applies to"
          + " volumes created afterwards; a volume keeps what its dataset records.",
          (c, v) -> c.zfsPbkdf2Iters = v),
      Flag.number("--iscsi-gc-interval-seconds", "SECONDS", "qnap only: how often the sweeper looks, 10 to 3600 (default: 60).",
          (c, v) -> c.iscsiGcInterval = v),
      Flag.number("--iscsi-gc-grace-seconds", "SECONDS", "qnap only: how long a session must be seen unused before it is logged out, 60 to 86400"
          + " (default: 300).",
          (c, v) -> c.iscsiGcGrace = v),
      Flag.path("--config", "FILE", "HCL file (JSON when named *.json) setting any"
          + " flag above: --some-flag is the key some_flag (a list for a repeatable flag), and a backend's settings"
          + " are its block, e.g. qnap { url = \"https://nas:443\" }. Flags and CSI_ENDPOINT/CSI_NODE_ID win over"
          + " the file; secrets stay in files (http_token_file, qnap's credentials_file). An unknown key or a bad"
          + " value stops serve naming the file, line and rule. A *.properties file is read the old way"
          + " (node-id=..., qnap.url=...).",
          (c, v) -> c.config = v)));

  String driver;
  String endpoint;
  String nodeId;
  String iscsiIface;
  Path dataDir;
  Path journalDir;
  String pluginName;
  List<Path> allowedRoots = new ArrayList<>();
  Long maxVolumes;
  Long drainSeconds;
  String httpListen;
  Path httpTokenFile;
  Path httpTlsCert;
  Path httpTlsKey;
  Path httpTlsClientCa;
  Boolean metrics;
  String iscsiGc;
  String peerListen;
  List<String> peers = new ArrayList<>();
  String peerService;
  Path peerTlsCert;
  Path peerTlsKey;
  Path peerTlsCa;
  String placementReserve;
  Long luksIterTime;
  Long luksPbkdfMemory;
  Long zfsPbkdf2Iters;
  Long iscsiGcInterval;
  Long iscsiGcGrace;
  Path config;

  /** The flags the command line gave: they win over the config file. */
  private Set<String> given = Set.of();

  /** Where the config file set what; null without one. */
  private ServeConfig applied;

  /** The selected backend's block of the config file. */
  Map<String, String> backendOptions = Map.of();

  /**
   * {@code caravan serve ARGS}: parses the flags, then serves until a signal.
   *
   * @return the process's exit status: 0, 1 when the plugin cannot start, 2 for a bad setting
   */
  static int run(String... args) {
    Optional<ServeCommand> serve;
    try {
      serve = parse(args);
    } catch (FlagException e) {
      System.err.println("caravan serve: " + e.getMessage());
      return 2;
    }
    if (serve.isEmpty()) {
      return 0;
    }
    try {
      return serve.get().call();
    } catch (IOException e) {
      System.err.println("caravan: cannot start: " + e.getMessage());
      return 1;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 1;
    }
  }

  /**
   * A serve command with {@code args} set; empty after printing the help or the version they asked for.
   *
   * @throws FlagException for an unknown flag or a bad value, naming it and the rule
   */
  static Optional<ServeCommand> parse(String... args) {
    ServeCommand serve = new ServeCommand();
    Flags.Parsed parsed = FLAGS.parse(serve, args);
    if (parsed.help()) {
      System.out.print(FLAGS.usage());
      return Optional.empty();
    }
    if (parsed.version()) {
      System.out.println(Main.versionLine());
      return Optional.empty();
    }
    serve.given = parsed.given();
    return Optional.of(serve);
  }

  @Override
  public Integer call() throws IOException, InterruptedException {
    int bad = applyConfig();
    if (bad != 0) {
      return bad;
    }
    String drv = first(driver, null, "file");
    if (!Backends.DRIVERS.contains(drv)) {
      return usage("--driver", "unknown driver '" + drv + "'; known drivers: " + String.join(", ", Backends.DRIVERS));
    }
    String ep = first(endpoint, env(Endpoint.ENV), null);
    Path socket;
    try {
      socket = Endpoint.parse(ep);
    } catch (IllegalArgumentException e) {
      return usage("--endpoint", e.getMessage());
    }
    if (iscsiIface != null) {
      if (!drv.equals("qnap")) {
        return usage("--iscsi-iface", "only the qnap driver logs in over iSCSI, not '" + drv + "'");
      }
      try {
        Iscsi.system().through(iscsiIface);
      } catch (IllegalArgumentException e) {
        return usage("--iscsi-iface", e.getMessage());
      }
      Map<String, String> options = new HashMap<>(backendOptions);
      options.put("iscsi-iface", iscsiIface);
      backendOptions = Map.copyOf(options);
    }
    String node;
    try {
      node = nodeId(drv);
    } catch (StorageException e) {
      return usage(iscsiIface != null ? "--iscsi-iface" : "--node-id", "the qnap driver's node id is this node's"
          + " iSCSI initiator name, and " + e.getMessage() + "; install open-iscsi or give --node-id");
    }
    Path data = dataDir != null ? dataDir : defaultDataDir(drv);
    String name = first(pluginName, null, IdentityService.defaultName(drv));
    long max = maxVolumes != null ? maxVolumes : 0;
    long drain = drainSeconds != null ? drainSeconds : 10;

    ObserveSettings observe;
    try {
      observe = observeSettings();
    } catch (IllegalArgumentException | IOException e) {
      return usage("--http-listen", e.getMessage());
    }
    IscsiGc gc;
    try {
      Map<String, String> gcKeys = new HashMap<>();
      if (iscsiGcInterval != null) {
        gcKeys.put("iscsi-gc-interval-seconds", Long.toString(iscsiGcInterval));
      }
      if (iscsiGcGrace != null) {
        gcKeys.put("iscsi-gc-grace-seconds", Long.toString(iscsiGcGrace));
      }
      gc = IscsiGc.parse(iscsiGc, gcKeys);
    } catch (IllegalArgumentException e) {
      String option = e.getMessage().contains("interval") ? "--iscsi-gc-interval-seconds"
          : e.getMessage().contains("grace") ? "--iscsi-gc-grace-seconds" : "--iscsi-gc";
      return usage(option, e.getMessage());
    }
    Optional<PeerSettings> peering;
    try {
      peering = PeerFlags.parse(drv, node, peerListen, peers, peerService, System.getenv(), peerTlsCert, peerTlsKey,
          peerTlsCa, placementReserve);
    } catch (IllegalArgumentException e) {
      System.err.println("caravan: " + e.getMessage());
      return 2;
    }
    KeyCosts keyCosts;
    try {
      keyCosts = new KeyCosts(luksCost(), KeyCosts.DEFAULT.zfs());
    } catch (FlagException e) {
      return usage(e.getMessage().startsWith("--luks-pbkdf-memory") ? "--luks-pbkdf-memory" : "--luks-iter-time",
          e.getMessage());
    }
    try {
      keyCosts = new KeyCosts(keyCosts.luks(), zfsCost());
    } catch (FlagException e) {
      return usage("--zfs-pbkdf2-iters", e.getMessage());
    }
    JournalPlace journal = JournalPlace.choose(journalDir, data);
    try {
      int moved = journal.migrate();
      LOG.log(System.Logger.Level.INFO, "node journal in {0}: {1}{2}", journal.dir(), journal.why(),
          moved == 0 ? "" : "; moved " + moved + " record file(s) here from " + journal.other());
    } catch (UncheckedIOException e) {
      System.err.println("caravan: cannot start: " + e.getMessage() + ": " + e.getCause().getMessage());
      return 1;
    }
    Plugin plugin;
    try {
      plugin = Plugin.start(new Plugin.Settings(drv, socket, node, data, journal.dir(), name, max, backendOptions, observe)
          .withAllowedRoots(List.copyOf(allowedRoots)).withKeyCosts(keyCosts), gc, peering);
    } catch (IllegalArgumentException | IllegalStateException | IOException e) {
      String where = applied == null ? "" : applied.whereBackend(String.valueOf(e.getMessage()));
      System.err.println("caravan: " + where + "cannot start: " + e.getMessage());
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

  /**
   * Reads {@code --config}, if given, into the options the command line and the environment left
   * unset, and the backend's options.
   *
   * @return 0, or 2 after printing {@code file:line: rule}
   */
  int applyConfig() {
    if (config == null) {
      return 0;
    }
    try {
      Body body = config.getFileName().toString().endsWith(".properties")
          ? LegacyProperties.read(config, Backends.DRIVERS) : ConfigFiles.read(config);
      applied = ServeConfig.apply(config, body, FLAGS, this, given, Backends.DRIVERS,
          flag -> env(ENVIRONMENT.get(flag)) != null);
      String drv = driver == null ? "file" : driver;
      if (Backends.DRIVERS.contains(drv)) {
        backendOptions = applied.backend(body, drv).backendOptions();
      }
      return 0;
    } catch (ConfigException e) {
      System.err.println("caravan: " + e.getMessage());
      return 2;
    }
  }

  /** A bad setting: exit 2, naming the config file and line when the value came from there. */
  private int usage(String option, String message) {
    String where = applied == null ? "" : applied.where(option);
    System.err.println("caravan: " + where + (where.isEmpty() ? "" : ServeConfig.key(option) + ": ")
        + message);
    return 2;
  }

  private ObserveSettings observeSettings() throws IOException {
    boolean metricsOn = metrics == null || metrics;
    String listen = first(httpListen, null, HttpSettings.DEFAULT_HOST + ":" + HttpSettings.DEFAULT_PORT);
    Optional<NomadClient> nomad = NomadClient.fromEnvironment(System.getenv());
    if (listen.equals("off")) {
      return new ObserveSettings(metricsOn, Optional.empty(), UsageCollector.Settings.defaults(), nomad);
    }
    HttpSettings http = HttpSettings.parseListen(listen)
        .withToken(Optional.ofNullable(httpTokenFile))
        .withTls(Optional.ofNullable(httpTlsCert), Optional.ofNullable(httpTlsKey), Optional.ofNullable(httpTlsClientCa));
    http.check();
    return new ObserveSettings(metricsOn, Optional.of(http), UsageCollector.Settings.defaults(), nomad);
  }

  /**
   * The LUKS2 key slot cost of new encrypted file and qnap volumes: {@code --luks-iter-time} and
   * {@code --luks-pbkdf-memory}, each else its default.
   *
   * @throws FlagException naming the flag and its rule for a value out of range
   */
  KeySlotCost luksCost() {
    KeyCosts costs = KeyCosts.DEFAULT;
    try {
      if (luksIterTime != null) {
        costs = costs.withLuksIterTime(luksIterTime);
      }
      if (luksPbkdfMemory != null) {
        costs = costs.withLuksPbkdfMemory(luksPbkdfMemory);
      }
    } catch (IllegalArgumentException e) {
      throw new FlagException(e.getMessage());
    }
    return costs.luks();
  }

  /**
   * The pbkdf2iters of new encrypted local volumes: {@code --zfs-pbkdf2-iters}, else the default.
   *
   * @throws FlagException naming the flag and its rule for a value out of range
   */
  Pbkdf2Iters zfsCost() {
    if (zfsPbkdf2Iters == null) {
      return Pbkdf2Iters.DEFAULT;
    }
    try {
      return KeyCosts.zfsPbkdf2Iters(zfsPbkdf2Iters);
    } catch (IllegalArgumentException e) {
      throw new FlagException(e.getMessage());
    }
  }

  /** Where {@code drv}'s state lives without {@code --data-dir}; doctor checks the same place. */
  static Path defaultDataDir(String drv) {
    return Path.of("/var/lib/caravan", drv);
  }

  private static String env(String name) {
    return name == null ? null : System.getenv(name);
  }

  private static String first(String flag, String env, String fallback) {
    if (flag != null && !flag.isEmpty()) {
      return flag;
    }
    if (env != null && !env.isEmpty()) {
      return env;
    }
    return fallback;
  }

  /**
   * The node id: the flag, else Nomad's CSI_NODE_ID, else what identifies the node to its storage:
   * for qnap the initiator name it logs in with (its node ids are what the targets' ACLs admit): its
   * interface's, when it logs in through one ({@code --iscsi-iface} or {@code qnap.iscsi-iface}),
   * else the host's; else the hostname.
   */
  String nodeId(String drv) {
    String given = first(nodeId, env("CSI_NODE_ID"), null);
    if (given != null) {
      return given;
    }
    if (!drv.equals("qnap")) {
      return hostname();
    }
    String iface = backendOptions.get("iscsi-iface");
    return iface == null || iface.isBlank() ? Iscsi.system().initiatorName()
        : Iscsi.system().through(iface.strip()).initiatorName();
  }

  private static String hostname() {
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (UnknownHostException e) {
      return "localhost";
    }
  }
}
