package dev.caravan.csi.peer;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Turns {@code caravan serve}'s peer flags into {@link PeerSettings}, or says what is wrong with them. */
public final class PeerFlags {
  private static final Pattern SIZE = Pattern.compile("([0-9]{1,15})\\s*([KMGT]i?B?)?", Pattern.CASE_INSENSITIVE);

  private PeerFlags() {}

  /**
   * Empty when no peer flag is given (the plugin serves its own node alone); IllegalArgumentException
   * naming the flag for an incomplete or contradictory set.
   */
  public static Optional<PeerSettings> parse(String driver, String self, String listen, List<String> peers,
      Path cert, Path key, Path ca, String reserve) {
    boolean any = listen != null || !peers.isEmpty() || cert != null || key != null || ca != null || reserve != null;
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
    return Optional.of(new PeerSettings(PeerAddress.parse("--peer-listen", listen), cert, key, ca,
        StaticPeers.parse(peers, self), reserve == null ? 0 : bytes("--placement-reserve", reserve),
        PeerSettings.DEFAULT_TIMEOUT));
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
