package dev.caravan.csi.peer;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Where a node's peer endpoint listens. */
public record PeerAddress(String host, int port) {
  private static final Pattern FORM = Pattern.compile("(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]+):([0-9]{1,5})");

  public PeerAddress {
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("peer port " + port + " is not between 1 and 65535");
    }
  }

  /** {@code HOST:PORT} ({@code [v6]:PORT} for IPv6); IllegalArgumentException naming {@code what}. */
  public static PeerAddress parse(String what, String text) {
    Matcher m = FORM.matcher(text);
    if (!m.matches()) {
      throw new IllegalArgumentException(what + " '" + text + "' is not HOST:PORT");
    }
    String host = m.group(1);
    if (host.startsWith("[")) {
      host = host.substring(1, host.length() - 1);
    }
    return new PeerAddress(host, Integer.parseInt(m.group(2)));
  }

  @Override
  public String toString() {
    return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + port;
  }
}
