package dev.caravan.storage.iscsi;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.ToolException;
import dev.caravan.storage.block.ScsiDisk;
import dev.caravan.storage.block.ScsiDisks;
import dev.caravan.storage.internal.Pauses;
import dev.caravan.storage.internal.iscsi.OpenIscsi;
import dev.caravan.storage.internal.iscsi.OpenIscsi.NodeInfo;
import dev.caravan.storage.internal.iscsi.OpenIscsi.SessionInfo;
import dev.caravan.storage.internal.sys.Sysfs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The host's software iSCSI initiator (open-iscsi): discover targets, log in and out, and find the
 * SCSI disks a session brought.
 *
 * <p>What is read comes from the kernel and the node database through libopeniscsiusr and sysfs;
 * nothing is parsed out of {@code iscsiadm -m session -P 3}. What changes state (discovery, login,
 * logout, node records) runs {@code iscsiadm}, because open-iscsi offers no library for it, through
 * host-storage's one process runner: an argument list, a timeout, no shell.
 *
 * <p>Every operation is idempotent: logging in where a session exists, logging out where none
 * does, deleting a record that is gone all succeed and say so. Node records this class creates or
 * logs in with are set to {@code node.startup = manual}, so iscsid never logs in to them on its own
 * at boot: whoever logged in decides when to log in again. They also get path timeouts suited to
 * dm-multipath ({@link PathTimeouts#MULTIPATH}: a dead portal's queued I/O is failed up to
 * dm-multipath after at most 15 s instead of open-iscsi's default 120 s; see {@link
 * #withPathTimeouts}). CHAP
 * credentials are written into the node record, never passed on a command line (see {@link
 * #login}).
 */
public final class Iscsi {
  static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);
  private static final Path SESSIONS = Path.of("/sys/class/iscsi_session");
  private static final Path INITIATOR_NAME = Path.of("/etc/iscsi/initiatorname.iscsi");
  // RFC 3720 names: iqn.yyyy-mm.reversed.domain[:anything], eui.<16 hex>, naa.<16 or 32 hex>.
  private static final Pattern NAME =
      Pattern.compile(
          "iqn\\.\\d{4}-\\d{2}\\.[a-z0-9][a-z0-9.-]*(:[\\x21-\\x2e\\x30-\\x7e]*)?"
              + "|eui\\.[0-9A-Fa-f]{16}|naa\\.[0-9A-Fa-f]{16}([0-9A-Fa-f]{16})?");
  private static final int NAME_MAX = 223;
  private static final Duration POLL = Duration.ofMillis(100);

  private final Iscsiadm iscsiadm;
  /** The open-iscsi interface every login, record and session look-up goes through; empty: iscsid's default. */
  private final Optional<String> iface;
  private final PathTimeouts timeouts;

  private Iscsi(Iscsiadm iscsiadm, Optional<String> iface, PathTimeouts timeouts) {
    this.iscsiadm = iscsiadm;
    this.iface = iface;
    this.timeouts = timeouts;
  }

  /**
   * The host's open-iscsi: {@code iscsiadm} from PATH, each run given 60 seconds, logging in with
   * {@link PathTimeouts#MULTIPATH}.
   */
  public static Iscsi system() {
    return new Iscsi(new Iscsiadm("iscsiadm", DEFAULT_TIMEOUT), Optional.empty(), PathTimeouts.MULTIPATH);
  }

  /**
   * The same initiator, writing {@code timeouts} into the node records it logs in with (from the
   * next {@link #login} on; a running session keeps the values it logged in with).
   */
  public Iscsi withPathTimeouts(PathTimeouts timeouts) {
    return new Iscsi(iscsiadm, iface, Objects.requireNonNull(timeouts, "timeouts"));
  }

  /** The path timeouts {@link #login} writes into node records. */
  public PathTimeouts pathTimeouts() {
    return timeouts;
  }

  /**
   * The same initiator, logging in through the open-iscsi interface {@code iface} (a record in
   * {@code /etc/iscsi/ifaces}, see {@link #defineIface}): discovery, logins, node records and the
   * session look-ups of this object are then that interface's only, and {@link #initiatorName()} is
   * its initiator name. {@code default} is iscsid's own interface, the host's identity. What other
   * interfaces do is left alone, so two users of one host with interfaces of their own never log
   * each other out. ({@link #system()} itself goes through {@code default} but sees every session.)
   */
  public Iscsi through(String iface) {
    IscsiIfaces.requireName(iface);
    return new Iscsi(iscsiadm, Optional.of(iface), timeouts);
  }

  /** The interface this object is limited to; empty for {@link #system()}, which sees every one. */
  public Optional<String> iface() {
    return iface;
  }

  /**
   * The same initiator, with {@code timeout} for each iscsiadm run (a login waits for the target's
   * answer, and for iscsid's own retries when there is none); a run that takes longer is killed.
   */
  public Iscsi withTimeout(Duration timeout) {
    if (timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("timeout must be positive: " + timeout);
    }
    return new Iscsi(new Iscsiadm("iscsiadm", timeout), iface, timeouts);
  }

  /**
   * The initiator name this object logs in with: the interface's {@code iface.initiatorname} when
   * it goes through one that sets it, else this host's, from {@code /etc/iscsi/initiatorname.iscsi}.
   *
   * @throws StorageException when the interface has no record (iscsiadm would refuse every login
   *     through it), or the host's name cannot be read
   */
  public String initiatorName() {
    if (iface.isPresent() && !IscsiIfaces.BUILT_IN.contains(iface.get())) {
      if (IscsiIfaces.record(IscsiIfaces.IFACES, iface.get()).isEmpty()) {
        throw new StorageException("the iSCSI interface '" + iface.get() + "' has no record in " + IscsiIfaces.IFACES
            + " (create it: iscsiadm -m iface -I " + iface.get() + " -o new, then set iface.initiatorname)");
      }
      Optional<String> own = IscsiIfaces.value(IscsiIfaces.IFACES, iface.get(), IscsiIfaces.INITIATOR_NAME);
      if (own.isPresent()) {
        return own.get();
      }
    }
    try {
      return Files.readAllLines(INITIATOR_NAME, StandardCharsets.UTF_8).stream()
          .map(String::strip)
          .filter(line -> line.startsWith("InitiatorName="))
          .map(line -> line.substring("InitiatorName=".length()).strip())
          .findFirst()
          .orElseThrow(() -> new StorageException(INITIATOR_NAME + " names no InitiatorName"));
    } catch (IOException e) {
      String why = e instanceof NoSuchFileException ? "no such file" : String.valueOf(e.getMessage());
      throw new StorageException("cannot read " + INITIATOR_NAME + ": " + why + " (is open-iscsi installed?)", e);
    }
  }

  /**
   * Asks {@code portal} which targets it offers (SendTargets). Nothing is written to the node
   * database: {@link #login} creates the records it needs.
   *
   * @throws IscsiLoginException when the portal does not answer or refuses
   */
  public List<DiscoveredTarget> discover(Portal portal) {
    Objects.requireNonNull(portal, "portal");
    try {
      return iscsiadm
          .run(Iscsiadm.through(iscsiadm.discover(portal), iface), Iscsiadm.NO_OBJS_FOUND)
          .map(Iscsiadm::parseDiscovery)
          .orElse(List.of());
    } catch (ToolException e) {
      throw failure("discovery at " + portal, e);
    }
  }

  /**
   * Logs in to {@code target} through {@code portal}, unless a session to it through that portal
   * exists already. The node record is created when missing, and is set to log in manually, to
   * make one login attempt (iscsid would otherwise retry a refused login or a dead portal for up to
   * two minutes; the caller retries if it wants to), to give up on a dead portal after {@link
   * #pathTimeouts()}, and to use exactly {@code chap} (no CHAP when empty: credentials left by an
   * earlier login are removed).
   *
   * <p>CHAP: iscsiadm can take a value only on its command line ({@code -o update -n
   * node.session.auth.password -v SECRET}), where every user of the host sees it in {@code ps}. So
   * the credentials are written into the node record's file, which only root can read, under
   * iscsiadm's own database lock, and the login command names only the target and the portal.
   *
   * @throws IscsiLoginException when the target refuses the login (CHAP, ACL) or cannot be reached
   */
  public LoginOutcome login(String target, Portal portal, Optional<Chap> chap) {
    requireName(target);
    Objects.requireNonNull(portal, "portal");
    Objects.requireNonNull(chap, "chap");
    if (session(target, portal).isPresent()) {
      return LoginOutcome.ALREADY_LOGGED_IN;
    }
    List<NodeRecord> records = nodes(target, portal);
    if (records.isEmpty()) {
      iscsiadm.run(Iscsiadm.through(iscsiadm.newNode(target, portal), iface));
      records = nodes(target, portal);
      if (records.isEmpty()) {
        throw new StorageException(
            "iscsiadm created no node record for " + target + " at " + portal);
      }
    }
    for (NodeRecord record : records) {
      NodeRecordFiles.apply(NodeRecordFiles.NODES, record, timeouts, chap);
    }
    try {
      return iscsiadm.run(Iscsiadm.through(iscsiadm.login(target, portal), iface), Iscsiadm.SESS_EXISTS).isPresent()
          ? LoginOutcome.LOGGED_IN
          : LoginOutcome.ALREADY_LOGGED_IN;
    } catch (ToolException e) {
      throw failure("login to " + target + " at " + portal + (chap.isPresent() ? " with " + chap.get() : ""), e);
    }
  }

  /**
   * Logs out of the session to {@code target} through {@code portal}. Returns false when there was
   * none. The node record stays (see {@link #deleteNode}).
   */
  public boolean logout(String target, Portal portal) {
    requireName(target);
    Optional<IscsiSession> session = session(target, portal);
    if (session.isEmpty()) {
      return false;
    }
    // 21: the session ended between the look-up and the logout.
    return iscsiadm.run(iscsiadm.logout(session.get().sid()), Iscsiadm.NO_OBJS_FOUND).isPresent();
  }

  /**
   * Logs out of exactly {@code session}, by its number, if that number still names a session to the
   * same target and portal (the kernel does not reuse session numbers within a boot). Returns false
   * when it has ended. Unlike {@link #logout(String, Portal)}, a newer session to the same target
   * and portal is never touched.
   */
  public boolean logout(IscsiSession session) {
    Objects.requireNonNull(session, "session");
    boolean present = sessions().stream()
        .anyMatch(s -> s.sid() == session.sid() && s.isTo(session.target(), session.portal()));
    if (!present) {
      return false;
    }
    return iscsiadm.run(iscsiadm.logout(session.sid()), Iscsiadm.NO_OBJS_FOUND).isPresent();
  }

  /** Every iSCSI session on the host, in session-number order. */
  public List<IscsiSession> sessions() {
    List<IscsiSession> sessions = new ArrayList<>();
    for (SessionInfo info : OpenIscsi.sessions()) {
      String address = info.persistentAddress().isEmpty() ? info.address() : info.persistentAddress();
      int port = info.persistentAddress().isEmpty() ? info.port() : info.persistentPort();
      if (address.isEmpty() || port <= 0) {
        continue; // a session still being set up or torn down has no connection yet
      }
      sessions.add(
          new IscsiSession(info.sid(), info.targetName(), new Portal(address, port), info.tpgt(), info.iface()));
    }
    return List.copyOf(sessions);
  }

  /**
   * The session to {@code target} through {@code portal}, if there is one (through this object's
   * interface, when it has one).
   */
  public Optional<IscsiSession> session(String target, Portal portal) {
    return sessions().stream().filter(s -> s.isTo(target, portal) && isOurs(s.iface())).findFirst();
  }

  /** Whether a session or record of interface {@code name} is this object's to use. */
  private boolean isOurs(String name) {
    return iface.isEmpty() || iface.get().equals(name);
  }

  /**
   * The initiator name {@code session} logged in with, as the kernel recorded it ({@code
   * /sys/class/iscsi_session/session<sid>/initiatorname}): what the target's ACL admitted. Empty
   * when the session has ended.
   */
  public Optional<String> initiatorName(IscsiSession session) {
    Path file = SESSIONS.resolve("session" + session.sid()).resolve("initiatorname");
    try {
      String name = Files.readString(file, StandardCharsets.UTF_8).strip();
      return name.isEmpty() || name.equals("(null)") ? Optional.empty() : Optional.of(name);
    } catch (NoSuchFileException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw new StorageException("cannot read " + file + ": " + e, e);
    }
  }

  /**
   * Makes the interface record {@code name} log in as {@code initiatorName}: creates the record
   * (software iSCSI over TCP) when it is missing, and sets its initiator name when it differs.
   * Returns whether anything changed. Sessions already logged in through it keep the name they
   * logged in with.
   */
  public boolean defineIface(String name, String initiatorName) {
    IscsiIfaces.requireName(name);
    if (IscsiIfaces.BUILT_IN.contains(name)) {
      throw new IllegalArgumentException("'" + name + "' is iscsid's built-in interface, whose initiator name is the"
          + " host's (" + INITIATOR_NAME + "): give another interface name");
    }
    requireName(initiatorName);
    boolean changed = false;
    if (IscsiIfaces.record(IscsiIfaces.IFACES, name).isEmpty()) {
      iscsiadm.run(iscsiadm.newIface(name));
      changed = true;
    }
    if (IscsiIfaces.value(IscsiIfaces.IFACES, name, IscsiIfaces.TRANSPORT).isEmpty()) {
      iscsiadm.run(iscsiadm.updateIface(name, IscsiIfaces.TRANSPORT, "tcp"));
      changed = true;
    }
    if (!IscsiIfaces.value(IscsiIfaces.IFACES, name, IscsiIfaces.INITIATOR_NAME).equals(Optional.of(initiatorName))) {
      iscsiadm.run(iscsiadm.updateIface(name, IscsiIfaces.INITIATOR_NAME, initiatorName));
      changed = true;
    }
    return changed;
  }

  /**
   * Deletes the interface record {@code name}; false when there was none. Node records made through
   * it go with it (iscsiadm deletes them); sessions keep running.
   */
  public boolean deleteIface(String name) {
    IscsiIfaces.requireName(name);
    if (IscsiIfaces.record(IscsiIfaces.IFACES, name).isEmpty()) {
      return false;
    }
    return iscsiadm.run(iscsiadm.deleteIface(name), Iscsiadm.NO_OBJS_FOUND).isPresent();
  }

  /** Every record in the node database. */
  public List<NodeRecord> nodes() {
    List<NodeRecord> records = new ArrayList<>();
    for (NodeInfo info : OpenIscsi.nodes()) {
      records.add(
          new NodeRecord(
              info.targetName(), new Portal(info.address(), info.port()), info.tpgt(), info.iface()));
    }
    return List.copyOf(records);
  }

  private List<NodeRecord> nodes(String target, Portal portal) {
    return nodes().stream()
        .filter(r -> r.target().equals(target) && r.portal().equals(portal) && isOurs(r.iface()))
        .toList();
  }

  /**
   * Deletes the node records of {@code target} through {@code portal}; false when there were none.
   * A session that is logged in keeps running (log out first to end it).
   */
  public boolean deleteNode(String target, Portal portal) {
    requireName(target);
    if (nodes(target, portal).isEmpty()) {
      return false;
    }
    return iscsiadm.run(Iscsiadm.through(iscsiadm.deleteNode(target, portal), iface), Iscsiadm.NO_OBJS_FOUND)
        .isPresent();
  }

  /**
   * The SCSI disks (one per LUN) the session brought, as they are now. A LUN appears some time
   * after the login, when the kernel's scan and udev are done: see {@link ScsiDisks#awaitWwid}.
   */
  public List<ScsiDisk> disks(IscsiSession session) {
    List<ScsiDisk> disks = new ArrayList<>();
    for (String address : scsiAddresses(session)) {
      ScsiDisks.at(address).ifPresent(disks::add);
    }
    return List.copyOf(disks);
  }

  /**
   * Waits until the session's LUN {@code lun} has a block device whose WWID the kernel has read,
   * and returns it. After a login the kernel scans the target and udev settles asynchronously;
   * this is the moment the LUN becomes usable.
   *
   * @throws StorageException after {@code timeout}, or when the session ends meanwhile
   */
  public ScsiDisk awaitDisk(IscsiSession session, long lun, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Optional<ScsiDisk> disk =
          disks(session).stream().filter(d -> d.lun() == lun && d.wwid().isPresent()).findFirst();
      if (disk.isPresent()) {
        return disk.get();
      }
      if (sessions().stream().noneMatch(s -> s.sid() == session.sid())) {
        throw new StorageException("session " + session.sid() + " to " + session.target() + " ended");
      }
      if (System.nanoTime() - deadline > 0) {
        throw new StorageException(
            "no disk for LUN %d of %s at %s after %s (is the LUN mapped to this initiator?)"
                .formatted(lun, session.target(), session.portal(), timeout));
      }
      Pauses.pause(POLL, "interrupted");
    }
  }

  /**
   * Rescans the session: asks its SCSI host for new LUNs, and every LUN it has to re-read its
   * capacity (how a LUN grown on the target becomes bigger here). Through sysfs, as iscsiadm's
   * {@code --rescan} does.
   */
  public void rescan(IscsiSession session) {
    hostOf(session).ifPresent(ScsiDisks::scanHost);
    for (ScsiDisk disk : disks(session)) {
      ScsiDisks.rescan(disk);
    }
  }

  /** The session's SCSI host number ({@code session<sid>/device} sits below {@code host<N>}). */
  private static Optional<Integer> hostOf(IscsiSession session) {
    try {
      Path device = SESSIONS.resolve("session" + session.sid()).resolve("device").toRealPath();
      for (Path p = device; p != null; p = p.getParent()) {
        String name = p.getFileName() == null ? "" : p.getFileName().toString();
        if (name.matches("host\\d+")) {
          return Optional.of(Integer.parseInt(name.substring(4)));
        }
      }
      return Optional.empty();
    } catch (NoSuchFileException e) {
      return Optional.empty();
    } catch (IOException e) {
      throw new StorageException("cannot resolve the SCSI host of session " + session.sid(), e);
    }
  }

  /** {@code session<sid>/device/target<H>:<C>:<T>/<H>:<C>:<T>:<L>}: the session's LUNs. */
  private static List<String> scsiAddresses(IscsiSession session) {
    Path device = SESSIONS.resolve("session" + session.sid()).resolve("device");
    List<String> addresses = new ArrayList<>();
    for (Path target : Sysfs.entries(device)) {
      if (target.getFileName().toString().startsWith("target")) {
        for (Path lun : Sysfs.entries(target)) {
          String name = lun.getFileName().toString();
          if (name.matches("\\d+:\\d+:\\d+:\\d+")) {
            addresses.add(name);
          }
        }
      }
    }
    return addresses;
  }


  /**
   * Checks that {@code name} is an iSCSI name (RFC 3720: {@code iqn.}, {@code eui.} or {@code
   * naa.} form). It becomes a directory name in the node database, so this also keeps {@code /}
   * and {@code ..} out.
   */
  static void requireName(String name) {
    Objects.requireNonNull(name, "target");
    if (name.length() > NAME_MAX || !NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(
          "target '"
              + name
              + "' is not an iSCSI name (iqn.YYYY-MM.domain[:id], eui.<16 hex>, naa.<16 or 32"
              + " hex>; lower case, no '/', at most 223 characters)");
    }
  }

  private static IscsiLoginException failure(String what, ToolException e) {
    IscsiLoginException.Reason reason =
        e.exitCode() < 0 ? IscsiLoginException.Reason.UNREACHABLE : Iscsiadm.reason(e.exitCode());
    String words = e.stderr().strip();
    return new IscsiLoginException(
        reason,
        e.exitCode(),
        what
            + " failed ("
            + reason.name().toLowerCase(java.util.Locale.ROOT).replace('_', ' ')
            + ", iscsiadm exit "
            + e.exitCode()
            + ")"
            + (words.isEmpty() ? "" : ": " + words),
        e);
  }
}
