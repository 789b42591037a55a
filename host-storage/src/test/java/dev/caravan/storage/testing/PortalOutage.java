package dev.caravan.storage.testing;

import java.util.ArrayList;
import java.util.List;

/**
 * One iSCSI portal of the guest going dark, as when its network or the appliance's port dies:
 * netfilter drops every TCP segment to the portal's address and port and every one it sends, so
 * the initiator's connection sees nothing at all (no reset, no error), and new connections to it
 * go unanswered. The target itself keeps running, as a real appliance's does behind a dead link.
 * {@link #close()} removes the rules again: the portal comes back.
 *
 * <p>Only for the guest (a throwaway machine): it changes the host's firewall. The guest's
 * portals are loopback addresses, where the initiator's side of every connection is 127.0.0.1, so
 * the rules match the portal's own address and port, never the initiator's.
 */
public final class PortalOutage implements AutoCloseable {
  private final List<List<String>> rules;
  private boolean closed;

  private PortalOutage(List<List<String>> rules) {
    this.rules = rules;
  }

  /** Starts dropping the traffic of {@code portal} ({@code "127.0.0.1:3260"}). */
  public static PortalOutage drop(String portal) {
    int colon = portal.lastIndexOf(':');
    String address = portal.substring(0, colon);
    String port = portal.substring(colon + 1);
    // iptables (nf_tables flavour here) loads these on demand too; asking first makes a missing
    // module fail here, by name, rather than as an obscure iptables error.
    GuestIscsi.run(List.of("modprobe", "-a", "nf_tables", "nft_compat", "xt_tcpudp"));
    List<List<String>> rules =
        List.of(
            List.of("INPUT", "-p", "tcp", "-d", address, "--dport", port, "-j", "DROP"),
            List.of("INPUT", "-p", "tcp", "-s", address, "--sport", port, "-j", "DROP"));
    List<List<String>> added = new ArrayList<>();
    PortalOutage outage = new PortalOutage(added);
    try {
      for (List<String> rule : rules) {
        GuestIscsi.run(iptables("-I", rule));
        added.add(rule);
      }
    } catch (RuntimeException | Error e) {
      outage.close();
      throw e;
    }
    return outage;
  }

  /** Lets the portal's traffic through again. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (List<String> rule : rules) {
      GuestIscsi.run(iptables("-D", rule));
    }
  }

  private static List<String> iptables(String op, List<String> rule) {
    List<String> command = new ArrayList<>(List.of("iptables", "-w", op));
    command.addAll(rule);
    return command;
  }
}
