package dev.caravan.csi.peer;

import java.nio.file.Files;
import dev.caravan.csi.observe.nomad.NomadClient;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Turns {@code caravan serve}'s peer flags into {@link PeerSettings}, or says what is wrong with them. */
public final class PeerFlags {
  /** How long a peer set read from Nomad is used before it is read again. */
  static final Duration DISCOVERY_TTL = Duration.ofSeconds(30);

  private static final Pattern SIZE = Pattern.compile("([0-9]{1,15})\\s*([KMGT]i?B?)?", Pattern.CASE_INSENSITIVE);

  private PeerFlags() {}

  /**
   * Empty when no peer flag is given (the plugin serves its own node alone); IllegalArgumentException
   * naming the flag for an incomplete or contradictory set.
   */
  public static Optional<PeerSettings> parse(String driver, String self, String listen, List<String> peers,
      Path cert, Path key, Path ca, String reserve) {
    return parse(driver, self, listen, peers, null, Map.of(), cert, key, ca, reserve);
  }

  /**
   * As above, with discovery through Nomad.
   *
   * @param service the Nomad service whose registrations are the peers (instead of {@code peers})
   * @param env the environment, for Nomad's task API ({@code NOMAD_SECRETS_DIR}, {@code NOMAD_NAMESPACE})
   */
  public static Optional<PeerSettings> parse(String driver, String self, String listen, List<String> peers,
      String service, Map<String, String> env, Path cert, Path key, Path ca, String reserve) {
    boolean any = listen != null || !peers.isEmpty() || service != null || cert != null || key != null || ca != null
        || reserve != null;
    if (!any) {
      return Optional.empty();
    }
    if (listen == null) {
      throw new IllegalArgumentException("--peer, --peer-tls-* and --placement-reserve need --peer-listen HOST:PORT,"
          + " this node's peer endpoint");
    }
    if (driver.equals("qnap")) {
      throw new IllegalArgumentException("--peer-listen is for drivers whose volumes live on one node (file, local);"
          + " qnap volumes are reachable from every node");
    }
    if (cert == null || key == null || ca == null) {
      throw new IllegalArgumentException("the peer endpoint is mTLS only: --peer-tls-cert, --peer-tls-key and"
          + " --peer-tls-ca are all required with --peer-listen");
    }
    for (Path p : List.of(cert, key, ca)) {
      if (!Files.isReadable(p)) {
        throw new IllegalArgumentException("peer TLS file " + p + " is missing or unreadable");
      }
    }
    if (!NodeNames.valid(self)) {
      throw new IllegalArgumentException("node id '" + self + "' cannot take part in peering: " + NodeNames.RULE);
    }
    PeerSet set;
    if (service != null) {
      if (!peers.isEmpty()) {
        throw new IllegalArgumentException("--peer and --peer-service are exclusive: list the peers, or let Nomad");
      }
      NomadClient nomad = NomadClient.fromEnvironment(env).orElseThrow(() -> new IllegalArgumentException(
          "--peer-service reads Nomad's task API, and NOMAD_SECRETS_DIR is not set: run the plugin as a Nomad task"
              + " with an identity block, or list the peers with --peer"));
      String namespace = env.getOrDefault("NOMAD_NAMESPACE", "default");
      set = new NomadPeers(nomad, namespace.isEmpty() ? "default" : namespace, service, self, DISCOVERY_TTL,
          Clock.systemUTC());
    } else {
      set = StaticPeers.parse(peers, self);
    }
    return Optional.of(new PeerSettings(PeerAddress.parse("--peer-listen", listen), cert, key, ca, set,
        reserve == null ? 0 : bytes("--placement-reserve", reserve), PeerSettings.DEFAULT_TIMEOUT));
  }

  /** {@code 1073741824}, {@code 10G}, {@code 10GiB}, {@code 512MiB}: powers of 1024. */
  static long bytes(String flag, String text) {
    Matcher m = SIZE.matcher(text.trim());
    if (!m.matches()) {
      throw new IllegalArgumentException(flag + " '" + text + "' is not a size (bytes, or a number with K, M, G or T"
          + " (KiB, MiB, GiB, TiB))");
    }
    long n = Long.parseLong(m.group(1));
    String unit = m.group(2) == null ? "" : m.group(2).substring(0, 1).toUpperCase(Locale.ROOT);
    int shift = switch (unit) {
      case "K" -> 10;
      case "M" -> 20;
      case "G" -> 30;
      case "T" -> 40;
      default -> 0;
    };
    if (shift > 0 && n > (Long.MAX_VALUE >> shift)) {
      throw new IllegalArgumentException(flag + " '" + text + "' is too large");
    }
    return n << shift;
  }
}
