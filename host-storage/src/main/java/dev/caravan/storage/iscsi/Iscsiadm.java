package dev.caravan.storage.iscsi;

import dev.caravan.storage.ToolException;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.iscsi.IscsiLoginException.Reason;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The iscsiadm command lines host-storage runs, and what their exit codes mean. Every line is an
 * argument list for {@link ToolRunner}; none carries a secret (CHAP goes into the node record, see
 * {@link NodeRecordFiles}).
 */
final class Iscsiadm {
  // open-iscsi's iscsi_err.h (2.1.8): the exit codes iscsiadm returns.
  static final int TRANS = 4;
  static final int TRANS_TIMEOUT = 8;
  static final int PDU_TIMEOUT = 11;
  static final int SESS_EXISTS = 15;
  static final int ISCSID_COMM_ERR = 18;
  static final int FATAL_LOGIN = 19;
  static final int ISCSID_NOTCONN = 20;
  static final int NO_OBJS_FOUND = 21;
  static final int LOGIN_AUTH_FAILED = 24;
  static final int AGAIN = 29;

  private final String binary;
  private final Duration timeout;

  Iscsiadm(String binary, Duration timeout) {
    this.binary = binary;
    this.timeout = timeout;
  }

  /** SendTargets discovery that writes nothing to the node database. */
  List<String> discover(Portal portal) {
    return command(
        "-m", "discovery", "-t", "sendtargets", "-p", portal.toString(), "-o", "nonpersistent");
  }

  /** A static node record for the target through the portal, with iscsid.conf's defaults. */
  List<String> newNode(String target, Portal portal) {
    return command("-m", "node", "-o", "new", "-T", target, "-p", portal.toString());
  }

  List<String> deleteNode(String target, Portal portal) {
    return command("-m", "node", "-o", "delete", "-T", target, "-p", portal.toString());
  }

  List<String> login(String target, Portal portal) {
    return command("-m", "node", "-T", target, "-p", portal.toString(), "--login");
  }

  /** Logs out of one session by its number, whether or not a node record still describes it. */
  List<String> logout(int sid) {
    return command("-m", "session", "-r", Integer.toString(sid), "--logout");
  }

  /** The same command through the open-iscsi interface {@code iface} (its own initiator name, NIC). */
  static List<String> through(List<String> command, Optional<String> iface) {
    if (iface.isEmpty()) {
      return command;
    }
    List<String> with = new ArrayList<>(command);
    // iscsiadm reads -I anywhere; before a trailing --login it reads as the command line a person types.
    int at = with.get(with.size() - 1).startsWith("--") ? with.size() - 1 : with.size();
    with.add(at, iface.get());
    with.add(at, "-I");
    return List.copyOf(with);
  }

  /** A new interface record {@code /etc/iscsi/ifaces/<name>} with iscsid's defaults (software TCP). */
  List<String> newIface(String name) {
    return command("-m", "iface", "-I", name, "-o", "new");
  }

  /** Sets one value of an interface record (never a secret: an initiator name, a transport). */
  List<String> updateIface(String name, String key, String value) {
    return command("-m", "iface", "-I", name, "-o", "update", "-n", key, "-v", value);
  }

  List<String> deleteIface(String name) {
    return command("-m", "iface", "-I", name, "-o", "delete");
  }

  private List<String> command(String... arguments) {
    List<String> command = new ArrayList<>(arguments.length + 1);
    command.add(binary);
    command.addAll(List.of(arguments));
    return List.copyOf(command);
  }

  /**
   * Runs {@code command}; returns its standard output, or empty when it exited with one of {@code
   * tolerated}.
   *
   * @throws ToolException on any other failure
   */
  Optional<String> run(List<String> command, int... tolerated) {
    try {
      return Optional.of(ToolRunner.run(command, timeout).stdout());
    } catch (ToolException e) {
      for (int code : tolerated) {
        if (e.exitCode() == code) {
          return Optional.empty();
        }
      }
      throw e;
    }
  }

  /** The reason behind a failed discovery or login. */
  static Reason reason(int exitCode) {
    return switch (exitCode) {
      case LOGIN_AUTH_FAILED -> Reason.AUTHENTICATION_FAILED;
      case FATAL_LOGIN -> Reason.REFUSED;
      case TRANS, TRANS_TIMEOUT, PDU_TIMEOUT, AGAIN -> Reason.UNREACHABLE;
      case ISCSID_COMM_ERR, ISCSID_NOTCONN -> Reason.ISCSID_UNAVAILABLE;
      default -> Reason.OTHER;
    };
  }

  /**
   * Parses SendTargets output, one {@code address:port,tpgt target} line per portal and target
   * ({@code [address]:port,tpgt target} for IPv6).
   */
  static List<DiscoveredTarget> parseDiscovery(String output) {
    List<DiscoveredTarget> found = new ArrayList<>();
    for (String line : output.lines().map(String::strip).filter(l -> !l.isEmpty()).toList()) {
      int space = line.indexOf(' ');
      int comma = line.lastIndexOf(',', space);
      if (space < 0 || comma < 0) {
        continue; // not a record line (iscsiadm prints nothing else here, but be lenient)
      }
      try {
        Portal portal = Portal.parse(line.substring(0, comma));
        int tpgt = Integer.parseInt(line.substring(comma + 1, space));
        found.add(new DiscoveredTarget(line.substring(space + 1).strip(), portal, tpgt));
      } catch (IllegalArgumentException e) {
        // A portal given by host name in the target's answer: it cannot be used as given.
      }
    }
    return List.copyOf(found);
  }
}
