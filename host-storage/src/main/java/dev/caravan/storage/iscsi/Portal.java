package dev.caravan.storage.iscsi;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * An iSCSI portal: the IP address and TCP port a target listens on. Always an IP literal, never a
 * host name: the kernel, the node database and udev's {@code by-path} names all record the
 * address, so a name would match none of them.
 */
public record Portal(String address, int port) {
  public static final int DEFAULT_PORT = 3260;

  private static final Pattern IPV4 =
      Pattern.compile("(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)(\\.(25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)){3}");
  private static final Pattern IPV6 = Pattern.compile("[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*");

  public Portal {
    Objects.requireNonNull(address, "address");
    if (!IPV4.matcher(address).matches() && !IPV6.matcher(address).matches()) {
      throw new IllegalArgumentException(
          "a portal address must be an IPv4 or IPv6 literal, not '" + address + "'");
    }
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("a portal port must be 1 to 65535, not " + port);
    }
  }

  /**
   * Parses {@code 192.0.2.10}, {@code 192.0.2.10:3260}, {@code [2001:db8::1]} or {@code
   * [2001:db8::1]:3260}; the port defaults to 3260.
   */
  public static Portal parse(String text) {
    Objects.requireNonNull(text, "text");
    String address = text;
    int port = DEFAULT_PORT;
    if (text.startsWith("[")) {
      int close = text.indexOf(']');
      if (close < 0) {
        throw new IllegalArgumentException("portal '" + text + "' lacks the closing ']'");
      }
      address = text.substring(1, close);
      String rest = text.substring(close + 1);
      if (!rest.isEmpty()) {
        port = port(text, rest);
      }
    } else if (text.indexOf(':') >= 0 && text.indexOf(':') == text.lastIndexOf(':')) {
      address = text.substring(0, text.indexOf(':'));
      port = port(text, text.substring(text.indexOf(':')));
    }
    return new Portal(address, port);
  }

  private static int port(String text, String colonPort) {
    if (!colonPort.startsWith(":") || !colonPort.substring(1).matches("\\d{1,5}")) {
      throw new IllegalArgumentException("portal '" + text + "' has no valid port after ':'");
    }
    return Integer.parseInt(colonPort.substring(1));
  }

  /** Whether the address is IPv6. */
  public boolean isIpv6() {
    return address.indexOf(':') >= 0;
  }

  /** {@code 192.0.2.10:3260} or {@code [2001:db8::1]:3260}, as iscsiadm's {@code -p} takes it. */
  @Override
  public String toString() {
    return (isIpv6() ? "[" + address + "]" : address) + ":" + port;
  }
}
