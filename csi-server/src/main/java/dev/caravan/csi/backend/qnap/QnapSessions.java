package dev.caravan.csi.backend.qnap;

import dev.caravan.storage.iscsi.IscsiSession;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Which iSCSI sessions on a node are the qnap backend's, for the leaked-session sweeper: a session
 * to one of the configured portals ({@code qnap.portals}, names resolved at each call) whose target
 * is named after a Caravan volume's LUN (the appliance names a target {@code
 * iqn.2004-04.com.qnap:<model>:iscsi.<name>.<serial>}, and Caravan names it {@code cv<e|x>-...-<hash>}
 * like the LUN). Any other session (another appliance, another driver's LUN on this one, the node's
 * own root disk) is outside.
 */
public final class QnapSessions {
  private static final System.Logger LOG = System.getLogger(QnapSessions.class.getName());

  private final List<String> portals;

  private QnapSessions(List<String> portals) {
    this.portals = List.copyOf(portals);
  }

  /** From the backend's options ({@code qnap.*} keys without the prefix), checked as the backend does. */
  public static QnapSessions of(Map<String, String> options) {
    return new QnapSessions(QnapConfig.parse(options).portals());
  }

  static QnapSessions ofPortals(List<String> portals) {
    return new QnapSessions(portals);
  }

  /** Whether the sweeper may consider {@code session} at all. */
  public boolean inScope(IscsiSession session) {
    return volumeId(session).isPresent() && toConfiguredPortal(session);
  }

  /** The id of the Caravan volume whose target {@code session} is logged in to, read from the target's name. */
  public Optional<String> volumeId(IscsiSession session) {
    return lunName(session.target()).map(name -> QnapIds.PREFIX + name);
  }

  /**
   * Whether the staged volume {@code volumeId} with {@code context} (its journal record) uses
   * {@code session}'s target: by the target in its context, or by its id.
   */
  public boolean uses(IscsiSession session, String volumeId, Map<String, String> context) {
    return session.target().equals(context.get("targetIqn"))
        || volumeId(session).map(volumeId::equals).orElse(false);
  }

  /** The Caravan LUN name inside a target IQN: one of the dot-separated parts after the last ':'. */
  static Optional<String> lunName(String iqn) {
    String tail = iqn.substring(iqn.lastIndexOf(':') + 1);
    for (String part : tail.split("\\.", -1)) {
      if (QnapIds.lun(part).isPresent()) {
        return Optional.of(part);
      }
    }
    return Optional.empty();
  }

  private boolean toConfiguredPortal(IscsiSession session) {
    InetAddress address;
    try {
      address = InetAddress.getByName(session.portal().address()); // an IP literal: no lookup
    } catch (UnknownHostException e) {
      return false;
    }
    for (String portal : portals) {
      int colon = portal.lastIndexOf(':');
      int port = Integer.parseInt(portal.substring(colon + 1));
      String host = portal.substring(0, colon).replace("[", "").replace("]", "");
      if (port == session.portal().port() && resolve(host).contains(address)) {
        return true;
      }
    }
    return false;
  }

  private static List<InetAddress> resolve(String host) {
    try {
      return List.of(InetAddress.getAllByName(host));
    } catch (UnknownHostException e) {
      // Unresolvable now: no session counts as to it, so none is swept on its account.
      LOG.log(System.Logger.Level.WARNING, "iscsi sweeper: cannot resolve qnap portal {0}: {1}", host, e.getMessage());
      return List.of();
    }
  }
}
