package dev.caravan.csi.backend.qnap;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * A {@link QnapSimulator} as the shared conformance suites use it (they live in another package):
 * started for one plugin's work directory, with the backend options that point the plugin at it, and
 * an oracle of what it holds; in the guest, {@link #withLio} puts real LIO targets behind it.
 */
public final class SimulatedAppliance implements AutoCloseable {
  /** The pool the suites' volumes land in (the simulator's pool 1 holds 64 TiB). */
  public static final int POOL = 1;

  private final QnapSimulator sim;
  private final Path work;
  private LioListener lio;

  private SimulatedAppliance(QnapSimulator sim, Path work) {
    this.sim = sim;
    this.work = work;
  }

  /**
   * Puts real LIO targets of this kernel behind the appliance (the guest): a LUN on a loop device
   * over a sparse file in {@code dir}, each target listening on {@code portals}, its ACL and CHAP the
   * appliance's.
   */
  public SimulatedAppliance withLio(Path dir, List<String> portals) {
    lio = new LioListener(dir, portals);
    sim.listener(lio);
    return this;
  }

  /** A QTS appliance (CGI API) on a loopback port. */
  public static SimulatedAppliance start(Path work) throws IOException {
    QnapSimulator sim = new QnapSimulator(QnapSimulator.Flavour.QTS);
    // The suites' timing is the plugin's, not the appliance's: LUNs are ready at the first read.
    sim.creatingReads = 1;
    sim.removingReads = 1;
    sim.forkReads = 1;
    return new SimulatedAppliance(sim, work);
  }

  /** Backend options for a plugin on this appliance, its credentials written below the work directory. */
  public Map<String, String> options(List<String> portals, Map<String, String> extra) throws IOException {
    Path creds = work.resolve("qnap-credentials");
    if (!Files.exists(creds)) {
      Files.writeString(creds, "user=" + QnapSimulator.USER + "\npassword="
          + QnapSimulator.PASSWORD.replace("ü", "\\u00fc") + "\n");
      Files.setPosixFilePermissions(creds, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
    }
    Map<String, String> options = new java.util.HashMap<>(Map.of("url", sim.url().toString(), "transport", "cgi",
        "credentials-file", creds.toString(), "portals", String.join(",", portals), "ready-timeout-seconds", "30",
        "default-pool", Integer.toString(POOL)));
    options.putAll(extra);
    return Map.copyOf(options);
  }

  /** Every LUN, target and snapshot the appliance holds, as {@code lun:<name>}, {@code target:<name>}, ... */
  public Set<String> objects() {
    Set<String> out = new TreeSet<>();
    sim.lunNames().values().forEach(n -> out.add("lun:" + n));
    sim.targetNames().values().forEach(n -> out.add("target:" + n));
    sim.snapshotNames().forEach(n -> out.add("snapshot:" + n));
    return out;
  }

  /** Every LUN that exists, by name, one entry per LUN: a name made twice appears twice. */
  public List<String> luns() {
    return List.copyOf(sim.lunNames().values());
  }

  /** Every snapshot that exists (none being deleted), by name, one entry per snapshot. */
  public List<String> snapshots() {
    return sim.snapshotNames();
  }

  /** The LUN name of {@code volumeId} ({@code qnap/v1/<LUN name>}). */
  public static String lunName(String volumeId) {
    return volumeId.substring(QnapIds.PREFIX.length());
  }

  // ---- faults (mode 7): what an appliance that is slow, failing or gone looks like to its client ----

  /** Every request waits {@code delay} before the appliance handles it (zero: at once). */
  public void slow(java.time.Duration delay) {
    sim.delay = delay;
  }

  /** Every request, the login too, is answered with HTTP {@code status} (a 5xx) and an HTML page. */
  public void failWith(int status) {
    sim.failingWith = status;
  }

  /** Nothing listens on the appliance's port any more: connections are refused. */
  public void refuseConnections() {
    sim.refuse();
  }

  /** Healthy again: listening on its port, answering at once and as the API says. */
  public void heal() throws IOException {
    sim.delay = java.time.Duration.ZERO;
    sim.failingWith = 0;
    sim.accept();
  }

  /** How many requests the appliance has received (handled or failed). */
  public int requests() {
    return sim.calls().size();
  }

  /** The size of the LUN of {@code volumeId} ({@code qnap/v1/<LUN name>}); -1 when there is none. */
  public long lunBytes(String volumeId) {
    return sim.lunBytes(volumeId.substring(QnapIds.PREFIX.length()));
  }

  /** The initiators the volume's target admits. */
  public List<String> acl(String volumeId) {
    return sim.acl(volumeId.substring(QnapIds.PREFIX.length()));
  }

  /**
   * An operator sets the Default Policy of the volume's target back to the factory's (read/write for
   * every initiator its ACL does not list) in the appliance's UI.
   */
  public void openDefaultPolicy(String volumeId) {
    sim.setDefaultAccess(volumeId.substring(QnapIds.PREFIX.length()), QnapSimulator.READ_WRITE);
  }

  /** The appliance's IQN of the volume's target. */
  public static String targetIqn(String volumeId) {
    return QnapSimulator.IQN_PREFIX + volumeId.substring(QnapIds.PREFIX.length()) + QnapSimulator.IQN_POSTFIX;
  }

  /** Stops the simulator; with LIO behind it, removes every target and backstore it made. */
  @Override
  public void close() {
    sim.close();
    if (lio != null) {
      lio.close();
    }
  }
}
