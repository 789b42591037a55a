package dev.caravan.csi.cli;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.bindings.NativeLibraries.Library;
import dev.caravan.csi.node.JournalPlace;
import dev.caravan.csi.peer.PeerCredentialChecks;
import dev.caravan.storage.HostCapabilities;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.crypt.Luks2;
import dev.caravan.storage.iscsi.Iscsi;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.zfs.PoolStatus;
import dev.caravan.storage.zfs.Zfs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import dev.caravan.storage.mount.ConfinedMounts;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * What a node needs before Caravan is deployed on it, per driver, read from the host itself:
 * {@code /proc/filesystems}, {@code /sys/module}, {@code /proc/self/mountinfo}, {@code /proc/net/unix},
 * the process's capabilities and the libraries the bindings load (through host-storage and the
 * bindings, never a shell).
 */
final class Preflight {
  enum Status { OK, WARN, FAIL }

  /** One line of the report: what was checked, what was found and, unless OK, how to fix it. */
  record Check(Status status, String subject, String found, String fix) {
    String line() {
      return String.format("%-4s %s: %s", status, subject, found) + (fix.isEmpty() ? "" : "\n     fix: " + fix);
    }
  }

  /** iscsid's and multipathd's sockets, in the abstract namespace (/proc/net/unix shows them with '@'). */
  static final String ISCSID_SOCKET = "@ISCSIADM_ABSTRACT_NAMESPACE";
  static final String MULTIPATHD_SOCKET = "@/org/kernel/linux/storage/multipathd";

  private final List<Check> checks = new ArrayList<>();

  private Preflight() {}

  static List<Check> run(String driver, Path dataDir, Path mountRoot, List<String> pools) {
    Preflight p = new Preflight();
    p.permissions();
    p.confinement();
    p.filesystems();
    p.library(Library.BLKID);
    for (String tool : List.of("mkfs.ext4", "e2fsck", "resize2fs", "mkfs.xfs", "xfs_growfs")) {
      p.tool(tool, tool.contains("xfs") ? "xfsprogs" : "e2fsprogs", tool.contains("xfs") ? Status.WARN : Status.FAIL);
    }
    switch (driver) {
      case "file" -> {
        p.loop();
        p.luks2();
      }
      case "local" -> {
        p.zfs();
        p.library(Library.ZFS_CORE);
        p.pools(pools);
      }
      case "qnap" -> {
        p.module("iscsi_tcp", "the iSCSI initiator (iscsi_tcp)", "modprobe iscsi_tcp (Debian: open-iscsi loads it)");
        p.module("dm_multipath", "device-mapper multipath (dm_multipath)", "modprobe dm_multipath (Debian: multipath-tools)");
        p.library(Library.OPEN_ISCSI_USR);
        p.tool("iscsiadm", "open-iscsi", Status.FAIL);
        p.daemon("iscsid", ISCSID_SOCKET, "apt install open-iscsi && systemctl enable --now iscsid");
        p.daemon("multipathd", MULTIPATHD_SOCKET, "apt install multipath-tools && systemctl enable --now multipathd");
        p.initiatorName();
        p.luks2();
      }
      default -> throw new IllegalArgumentException("unknown driver '" + driver + "'");
    }
    p.mountRoot(mountRoot);
    p.dataDir(dataDir);
    return List.copyOf(p.checks);
  }

  /** The checks of a node's own peer credentials, the ones {@code serve} runs before it starts. */
  static List<Check> peer(Path cert, Path key, Path ca, String node) {
    return PeerCredentialChecks.check(cert, key, ca, node, Instant.now()).stream()
        .map(f -> new Check(Status.valueOf(f.severity().name()), f.subject(), f.found(), f.fix())).toList();
  }

  /**
   * Where {@code serve} keeps the node journal with this data directory and {@code journalDir} (the
   * flag, or null), and why; a WARN when records still lie in the other place (serve moves them at
   * start; a running plugin of an older version still writes there).
   */
  static Check journal(Path journalDir, Path dataDir) {
    JournalPlace place = JournalPlace.choose(journalDir, dataDir);
    long waiting;
    try (Stream<Path> s = Files.isDirectory(place.other()) ? Files.list(place.other()) : Stream.empty()) {
      waiting = s.count();
    } catch (IOException e) {
      waiting = 0;
    }
    String found = place.dir() + " (" + place.why() + ")";
    return waiting == 0 ? new Check(Status.OK, "node journal", found, "")
        : new Check(Status.WARN, "node journal", found + "; " + waiting + " file(s) still in " + place.other(),
            "the next `caravan serve` start moves them; restart the plugin");
  }

  /**
   * The appliance a qnap config names: whether every Caravan target on it denies the initiators its
   * ACL does not list (its Default Policy), without which the fence is advisory. Read through the
   * controller's own client with the config's credentials; changes nothing.
   */
  static List<Check> applianceFence(java.util.Map<String, String> options, Path dataDir) {
    String subject = "appliance fence";
    List<Check> out = new ArrayList<>();
    try (dev.caravan.csi.backend.qnap.QnapBackend qnap = dev.caravan.csi.backend.qnap.QnapBackend.open(
        new dev.caravan.csi.backend.BackendConfig("caravan-doctor", dataDir, options,
            dev.caravan.csi.backend.NodeUsage.none()))) {
      List<String> open = qnap.openFences();
      for (String why : open) {
        out.add(new Check(Status.FAIL, subject, why, "on the appliance, set that target's Default Policy to Deny"
            + " Access; publishes of its volume are refused until then"));
      }
      if (open.isEmpty()) {
        out.add(new Check(Status.OK, subject, "every Caravan target on " + options.get("url") + " denies initiators"
            + " its ACL does not list", ""));
      }
    } catch (RuntimeException e) {
      out.add(new Check(Status.WARN, subject, "not checked: " + e.getMessage(), "make the appliance reachable with"
          + " the config's credentials, then run doctor again"));
    }
    return out;
  }

  private void add(Status s, String subject, String found, String fix) {
    checks.add(new Check(s, subject, found, s == Status.OK ? "" : fix));
  }

  private void permissions() {
    HostCapabilities host = HostCapabilities.current();
    boolean ok = host.isRoot() && host.canMount();
    add(ok ? Status.OK : Status.FAIL, "permissions", ok ? "root with CAP_SYS_ADMIN"
        : "not root with CAP_SYS_ADMIN (" + host + "): mount(2) and the loop and ZFS ioctls need both",
        "run the plugin as root (raw_exec, or a privileged container)");
  }

  /** How this kernel lets the node side resolve and mount below the allowed roots without a race. */
  private void confinement() {
    add(Status.OK, "path confinement", ConfinedMounts.mode().description(), "");
  }

  private void filesystems() {
    String text = read(Path.of("/proc/filesystems")).orElse("");
    List<String> known = text.lines().map(l -> l.substring(l.indexOf('\t') + 1).strip()).toList();
    add(known.contains("ext4") ? Status.OK : Status.FAIL, "kernel: ext4",
        known.contains("ext4") ? "in /proc/filesystems" : "not in /proc/filesystems", "modprobe ext4");
    add(known.contains("xfs") ? Status.OK : Status.WARN, "kernel: xfs",
        known.contains("xfs") ? "in /proc/filesystems" : "not in /proc/filesystems (volumes with fsType=xfs fail)",
        "modprobe xfs");
  }

  private void loop() {
    boolean control = Files.exists(Path.of("/dev/loop-control"));
    boolean module = Files.isDirectory(Path.of("/sys/module/loop"));
    add(control ? Status.OK : Status.FAIL, "kernel: loop devices",
        control ? "/dev/loop-control" + (module ? ", /sys/module/loop" : "") : "no /dev/loop-control",
        "modprobe loop (a container needs /dev/loop-control and /dev/loop* from the host)");
  }

  private void zfs() {
    Optional<String> version = read(Path.of("/sys/module/zfs/version")).map(String::strip);
    boolean control = Files.exists(Path.of("/dev/zfs"));
    if (version.isPresent() && control) {
      add(Status.OK, "kernel: ZFS module", "version " + version.get() + ", /dev/zfs", "");
    } else {
      add(Status.FAIL, "kernel: ZFS module", version.map(v -> "version " + v + " but no /dev/zfs")
              .orElse("not loaded (no /sys/module/zfs/version)"),
          "apt install zfs-dkms zfsutils-linux (bookworm-backports, contrib) && modprobe zfs;"
              + " a container needs /dev/zfs from the host");
    }
  }

  private void pools(List<String> pools) {
    if (pools.isEmpty()) {
      add(Status.FAIL, "pools", "none allowlisted",
          "name the pools: local { pools = [\"tank\"] } in the serve config, or doctor --pool tank");
      return;
    }
    if (!Files.exists(Path.of("/dev/zfs")) || !NativeLibraries.isAvailable(Library.ZFS_CORE)) {
      add(Status.FAIL, "pools", "cannot look at " + pools + " without ZFS", "fix the ZFS lines above first");
      return;
    }
    try (Zfs zfs = Zfs.open()) {
      for (String pool : pools) {
        Optional<PoolStatus> s = zfs.pool(pool);
        if (s.isEmpty()) {
          add(Status.FAIL, "pool " + pool, "not imported", "zpool import " + pool);
        } else {
          add(s.get().isUsable() ? Status.OK : Status.FAIL, "pool " + pool,
              s.get().health() + ", " + s.get().free() + " bytes free", "zpool status " + pool);
        }
      }
    } catch (RuntimeException e) {
      add(Status.FAIL, "pools", "cannot read pool state: " + e.getMessage(), "check /dev/zfs and the ZFS module");
    }
  }

  /** LUKS2 (encryption=on on file and qnap volumes): a warning, since plain volumes need none of it. */
  private void luks2() {
    Optional<String> why = Luks2.unavailableReason();
    add(why.isEmpty() ? Status.OK : Status.WARN, "LUKS2 (encryption=on)",
        why.map(w -> "not usable: " + w + "; encryption=on volumes are refused")
            .orElse("usable: libcryptsetup.so.12 and dm-crypt"),
        "apt install libcryptsetup12; modprobe dm_crypt (a kernel with device-mapper's crypt target)");
  }

  private void module(String name, String what, String fix) {
    boolean loaded = Files.isDirectory(Path.of("/sys/module", name));
    add(loaded ? Status.OK : Status.FAIL, "kernel: " + what, loaded ? "/sys/module/" + name : "not loaded", fix);
  }

  private void library(Library library) {
    NativeLibraries.Status s = NativeLibraries.status(library);
    if (s.available()) {
      add(Status.OK, "library " + String.join(", ", library.sonames()), loadedFiles(library.sonames()), "");
    } else {
      add(Status.FAIL, "library " + String.join(", ", library.sonames()), s.problem().orElse("unavailable"),
          "apt install " + library.debianPackages().replace(",", ""));
    }
  }

  /** The files the dynamic linker mapped for {@code sonames}; their names carry the version. */
  private static String loadedFiles(List<String> sonames) {
    List<String> maps = read(Path.of("/proc/self/maps")).orElse("").lines()
        .map(l -> l.substring(l.lastIndexOf(' ') + 1)).filter(f -> f.startsWith("/")).distinct().toList();
    List<String> found = new ArrayList<>();
    for (String soname : sonames) {
      maps.stream().filter(f -> Path.of(f).getFileName().toString().startsWith(soname)).findFirst()
          .ifPresentOrElse(found::add, () -> found.add(soname));
    }
    return "loaded " + String.join(", ", found);
  }

  private void tool(String name, String pkg, Status missing) {
    Optional<Path> p = HostCapabilities.current().tool(name);
    add(p.isPresent() ? Status.OK : missing, "tool " + name, p.map(Path::toString).orElse("not on PATH"),
        "apt install " + pkg);
  }

  private void daemon(String name, String socket, String fix) {
    boolean listening = read(Path.of("/proc/net/unix")).orElse("").lines()
        .anyMatch(l -> l.endsWith(" " + socket));
    add(listening ? Status.OK : Status.FAIL, name, listening ? "listening on " + socket : "not running (no "
        + socket + " socket)", fix);
  }

  private void initiatorName() {
    try {
      add(Status.OK, "initiator name", Iscsi.system().initiatorName() + " (the qnap driver's node id by default)", "");
    } catch (StorageException e) {
      add(Status.FAIL, "initiator name", e.getMessage(), "apt install open-iscsi (it writes /etc/iscsi/initiatorname.iscsi)");
    }
  }

  private void mountRoot(Path root) {
    List<MountEntry> table;
    try {
      table = MountTable.read();
    } catch (RuntimeException e) {
      add(Status.FAIL, "Nomad mount root", "cannot read /proc/self/mountinfo: " + e.getMessage(), "");
      return;
    }
    Path existing = root.toAbsolutePath().normalize();
    while (existing.getParent() != null && !Files.exists(existing)) {
      existing = existing.getParent();
    }
    Path at = existing;
    Optional<MountEntry> holder = table.stream().filter(m -> at.startsWith(m.mountPoint()))
        .max(Comparator.comparingInt(m -> m.mountPoint().getNameCount()));
    if (holder.isEmpty()) {
      add(Status.FAIL, "Nomad mount root " + root, "no mount holds it", "");
      return;
    }
    MountEntry m = holder.get();
    boolean shared = m.optionalFields().stream().anyMatch(f -> f.startsWith("shared:"));
    String where = (Files.exists(root) ? "" : "not created yet; ") + "on mount " + m.mountPoint()
        + (shared ? " (shared propagation)" : " (private propagation)");
    add(shared ? Status.OK : Status.WARN, "Nomad mount root " + root, where,
        "mounts a containerized node plugin makes there reach tasks only through a shared mount:"
            + " mount --make-rshared " + m.mountPoint() + " (raw_exec plugins on the host do not need it)");
    if (m.readOnly()) {
      add(Status.FAIL, "Nomad mount root " + root, "on a read-only mount", "mount it read-write");
    }
  }

  private void dataDir(Path dir) {
    Path existing = dir.toAbsolutePath().normalize();
    while (existing.getParent() != null && !Files.exists(existing)) {
      existing = existing.getParent();
    }
    boolean writable = Files.isWritable(existing) && Files.isDirectory(existing);
    String found = Files.exists(dir) ? (writable ? "exists, writable" : Files.isDirectory(dir) ? "exists, not writable" : "exists and is not a directory")
        : (writable ? "will be created below " + existing : "cannot be created: " + existing + " is not writable");
    add(writable ? Status.OK : Status.FAIL, "data directory " + dir + " (volumes and the node journal)", found,
        "give it to root: mkdir -p " + dir + " && chmod 0700 " + dir);
  }

  private static Optional<String> read(Path file) {
    try {
      return Optional.of(Files.readString(file, StandardCharsets.UTF_8));
    } catch (IOException e) {
      return Optional.empty();
    }
  }
}
