package dev.caravan.csi.backend.qnap;

import java.net.InetAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * The {@code qnap} backend's settings, from {@code qnap.*} keys of {@code caravan serve --config} (a
 * properties file, like every other backend's; the prefix is removed here). Credentials are never a
 * setting: they come from {@code credentials-file} or the environment ({@link Credentials}).
 *
 * <ul>
 *   <li>{@code url}: the appliance's management URL, {@code https://nas:443}; plain {@code http} only
 *       to a loopback address. Without it the instance is node-only ({@link #nodeOnly()}): it holds
 *       no appliance account, takes only {@code portals} and {@code iscsi-iface}, and refuses
 *       controller calls;
 *   <li>{@code transport}: {@code cgi} (QTS 5.x, QuTS hero h5), {@code rest} (hero h5/h6) or
 *       {@code auto} (default: REST on hero, CGI otherwise, read from the login CGI's firmware facts);
 *   <li>{@code ca-file}: PEM CA the appliance's certificate must chain to (default: the JVM's CAs);
 *   <li>{@code insecure-skip-tls-verify}: {@code true} accepts any certificate (a self-signed
 *       appliance); logged as a warning at every start;
 *   <li>{@code credentials-file}: properties file with {@code user} and {@code password};
 *   <li>{@code portals} (required): comma-separated {@code host[:port]} iSCSI portals nodes log in to;
 *   <li>{@code default-pool}: pool id used when a volume names none (default 1);
 *   <li>{@code chap-user-secret}, {@code chap-password-secret} (and {@code mutual-chap-user-secret},
 *       {@code mutual-chap-password-secret}): names of keys in the CSI secrets map that hold CHAP
 *       credentials; when set, every target's ACL row requires CHAP;
 *   <li>{@code clone-mode}: {@code copy} (default, an independent full copy) or {@code instant} (QuTS
 *       hero copy-on-write clones of snapshots, which keep their snapshot alive);
 *   <li>{@code request-timeout-seconds} (default 30), {@code ready-timeout-seconds} (how long
 *       asynchronous appliance work is polled, default 120), {@code login-retry-seconds} (how long a
 *       refused login is not retried, default 300);
 *   <li>{@code iscsi-iface}: the open-iscsi interface ({@code /etc/iscsi/ifaces/<name>}) the node side
 *       logs in through, for a node with several NICs or initiator identities; its {@code
 *       iface.initiatorname}, when set, is the initiator the appliance's ACL must admit (default: the
 *       host's own identity, iscsid's {@code default} interface).
 * </ul>
 */
record QnapConfig(
    Optional<URI> url,
    Transport transport,
    Optional<Path> caFile,
    boolean insecure,
    Optional<Path> credentialsFile,
    List<String> portals,
    int defaultPool,
    Optional<ChapNames> chap,
    boolean instantClone,
    Duration requestTimeout,
    Duration readyTimeout,
    Duration loginRetry,
    Optional<String> iscsiIface) {

  enum Transport {
    CGI,
    REST,
    AUTO
  }

  /** Names of the CSI secrets that hold CHAP credentials (never the credentials themselves). */
  record ChapNames(String user, String password, Optional<String> mutualUser, Optional<String> mutualPassword) {}

  static final Set<String> KEYS = Set.of("url", "transport", "ca-file", "insecure-skip-tls-verify",
      "credentials-file", "portals", "default-pool", "chap-user-secret", "chap-password-secret",
      "mutual-chap-user-secret", "mutual-chap-password-secret", "clone-mode", "request-timeout-seconds",
      "ready-timeout-seconds", "login-retry-seconds", "iscsi-iface");

  /** What a node-only instance takes; every other key configures the appliance's API. */
  static final Set<String> NODE_KEYS = Set.of("portals", "iscsi-iface");

  private static final Pattern PORTAL = Pattern.compile("[A-Za-z0-9.-]{1,253}|\\[[0-9A-Fa-f:]{2,39}\\]");
  private static final Pattern SECRET_NAME = Pattern.compile("[A-Za-z0-9_.-]{1,63}");

  QnapConfig {
    portals = List.copyOf(portals);
  }

  /** Whether this instance has no appliance: the node side only, with no credentials. */
  boolean nodeOnly() {
    return url.isEmpty();
  }

  /** Parses and checks the options; IllegalArgumentException naming the key and the rule. */
  static QnapConfig parse(Map<String, String> options) {
    Set<String> unknown = new TreeSet<>(options.keySet());
    unknown.removeAll(KEYS);
    if (!unknown.isEmpty()) {
      throw new IllegalArgumentException("unknown qnap backend option(s) " + unknown.stream().map(k -> "qnap." + k).toList()
          + "; known: " + new TreeSet<>(KEYS).stream().map(k -> "qnap." + k).toList());
    }
    Optional<URI> url = get(options, "url").map(QnapConfig::url);
    if (url.isEmpty()) {
      Set<String> api = new TreeSet<>(options.keySet());
      api.removeAll(NODE_KEYS);
      if (!api.isEmpty()) {
        throw new IllegalArgumentException(api.stream().map(k -> "qnap." + k).toList() + " configure the appliance's"
            + " API, which needs qnap.url, the appliance's management URL (e.g. https://nas.example:443); an"
            + " instance without qnap.url serves the node side only and takes only "
            + new TreeSet<>(NODE_KEYS).stream().map(k -> "qnap." + k).toList());
      }
    }
    Transport transport = switch (get(options, "transport").orElse("auto")) {
      case "cgi" -> Transport.CGI;
      case "rest" -> Transport.REST;
      case "auto" -> Transport.AUTO;
      default -> throw new IllegalArgumentException("qnap.transport '" + options.get("transport")
          + "' must be cgi, rest or auto");
    };
    boolean insecure = bool(options, "insecure-skip-tls-verify", false);
    Optional<Path> ca = get(options, "ca-file").map(Path::of);
    if (insecure && ca.isPresent()) {
      throw new IllegalArgumentException("qnap.ca-file and qnap.insecure-skip-tls-verify=true contradict each other");
    }
    List<String> portals = new ArrayList<>();
    for (String p : get(options, "portals").orElseThrow(() -> new IllegalArgumentException(
        "the qnap backend needs qnap.portals, the comma-separated iSCSI portals (host or host:port) nodes log in to"))
        .split(",", -1)) {
      portals.add(portal(p.strip()));
    }
    int pool = (int) number(options, "default-pool", 1, 0, Integer.MAX_VALUE);
    Optional<ChapNames> chap = chap(options);
    boolean instant = switch (get(options, "clone-mode").orElse("copy")) {
      case "copy" -> false;
      case "instant" -> true;
      default -> throw new IllegalArgumentException("qnap.clone-mode '" + options.get("clone-mode")
          + "' must be copy or instant");
    };
    return new QnapConfig(url, transport, ca, insecure, get(options, "credentials-file").map(Path::of), portals, pool,
        chap, instant, Duration.ofSeconds(number(options, "request-timeout-seconds", 30, 1, 600)),
        Duration.ofSeconds(number(options, "ready-timeout-seconds", 120, 1, 3600)),
        Duration.ofSeconds(number(options, "login-retry-seconds", 300, 0, 86400)), iscsiIface(options));
  }

  private static Optional<String> iscsiIface(Map<String, String> options) {
    Optional<String> name = get(options, "iscsi-iface");
    name.ifPresent(n -> {
      try {
        dev.caravan.storage.iscsi.Iscsi.system().through(n);
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("qnap.iscsi-iface: " + e.getMessage(), e);
      }
    });
    return name;
  }

  private static URI url(String text) {
    URI u;
    try {
      u = new URI(text);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("qnap.url '" + text + "' is not a URL: " + e.getMessage(), e);
    }
    boolean path = u.getRawPath() != null && !u.getRawPath().isEmpty() && !u.getRawPath().equals("/");
    if (u.getHost() == null || path || u.getRawQuery() != null || u.getRawUserInfo() != null) {
      throw new IllegalArgumentException("qnap.url '" + text + "' must be scheme://host[:port] with no path,"
          + " query or user (credentials come from qnap.credentials-file or the environment)");
    }
    if ("http".equals(u.getScheme())) {
      if (!loopback(u.getHost())) {
        throw new IllegalArgumentException("qnap.url '" + text + "' is plain http to a non-loopback host, which would"
            + " send the administrator password in clear; use https (with qnap.ca-file for the appliance's CA)");
      }
    } else if (!"https".equals(u.getScheme())) {
      throw new IllegalArgumentException("qnap.url '" + text + "' must start with https://");
    }
    return URI.create(u.getScheme() + "://" + u.getRawAuthority());
  }

  private static boolean loopback(String host) {
    try {
      return InetAddress.getByName(host).isLoopbackAddress();
    } catch (UnknownHostException e) {
      return false;
    }
  }

  private static String portal(String p) {
    int colon = p.lastIndexOf(':');
    String host = p;
    String port = "3260";
    if (colon > 0 && !p.endsWith("]")) {
      host = p.substring(0, colon);
      port = p.substring(colon + 1);
    }
    boolean portOk = port.matches("[0-9]{1,5}") && Integer.parseInt(port) > 0 && Integer.parseInt(port) < 65536;
    if (!PORTAL.matcher(host).matches() || !portOk) {
      throw new IllegalArgumentException("qnap.portals entry '" + p + "' must be host or host:port (an address or"
          + " name, port 1-65535)");
    }
    return host + ":" + port;
  }

  private static Optional<ChapNames> chap(Map<String, String> options) {
    Optional<String> user = secretName(options, "chap-user-secret");
    Optional<String> pass = secretName(options, "chap-password-secret");
    Optional<String> mUser = secretName(options, "mutual-chap-user-secret");
    Optional<String> mPass = secretName(options, "mutual-chap-password-secret");
    if (user.isPresent() != pass.isPresent() || mUser.isPresent() != mPass.isPresent()) {
      throw new IllegalArgumentException("qnap.chap-user-secret and qnap.chap-password-secret (and the mutual pair)"
          + " are given together or not at all");
    }
    if (mUser.isPresent() && user.isEmpty()) {
      throw new IllegalArgumentException("mutual CHAP (qnap.mutual-chap-*) needs one-way CHAP (qnap.chap-*) too");
    }
    return user.map(u -> new ChapNames(u, pass.orElseThrow(), mUser, mPass));
  }

  private static Optional<String> secretName(Map<String, String> options, String key) {
    Optional<String> v = get(options, key);
    v.ifPresent(name -> {
      if (!SECRET_NAME.matcher(name).matches()) {
        throw new IllegalArgumentException("qnap." + key + " '" + name + "' must be a secret's name: 1-63 letters,"
            + " digits, '_', '-', '.' (the name of a key in the volume's secrets, never the secret itself)");
      }
    });
    return v;
  }

  private static Optional<String> get(Map<String, String> options, String key) {
    String v = options.get(key);
    return v == null || v.isBlank() ? Optional.empty() : Optional.of(v.strip());
  }

  private static boolean bool(Map<String, String> options, String key, boolean dflt) {
    return switch (get(options, key).orElse(Boolean.toString(dflt))) {
      case "true" -> true;
      case "false" -> false;
      default -> throw new IllegalArgumentException("qnap." + key + " '" + options.get(key) + "' must be true or false");
    };
  }

  private static long number(Map<String, String> options, String key, long dflt, long min, long max) {
    String v = get(options, key).orElse(Long.toString(dflt));
    try {
      long n = Long.parseLong(v);
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException("qnap." + key + " '" + v + "' must be a whole number from " + min + " to " + max);
  }
}
