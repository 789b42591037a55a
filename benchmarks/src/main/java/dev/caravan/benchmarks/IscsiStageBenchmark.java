package dev.caravan.benchmarks;

import dev.caravan.csi.backend.NodeBackend;
import dev.caravan.csi.backend.VolumeRef;
import dev.caravan.csi.backend.qnap.QnapBackend;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.ToolException;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.block.ScsiDisks;
import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FormatOutcome;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.iscsi.Iscsi;
import dev.caravan.storage.iscsi.IscsiSession;
import dev.caravan.storage.iscsi.Portal;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.multipath.Multipath;
import dev.caravan.storage.testing.GuestIscsi;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.LioTarget;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * NodeStage and NodeUnstage of an ext4 iSCSI LUN on two portals of a real LIO target: Caravan's
 * qnap node against the same steps done as a driver that shells out does them (the node side of
 * nomad-csi-driver, S1 in docs/qnap-api.md §2). Guest only: it needs LIO, open-iscsi and
 * multipathd, which {@code benchmarks/guest-bench} provides through {@code scripts/guest-test}.
 *
 * <p><b>Caravan</b>: the plugin's own {@code QnapNode} (through {@link QnapBackend#systemNode}), i.e. login on
 * each portal through host-storage's {@link Iscsi} (node record created with {@code iscsiadm -o
 * new}, then {@code iscsiadm --login}; sessions through libopeniscsiusr), the disks and their WWIDs
 * from sysfs, the multipath map from multipathd's socket with both paths up; then the node engine's
 * filesystem steps as its {@code formatAndMount} does them for a formatted volume: the device held
 * open, the in-process probe ({@link Filesystems#formatIfEmpty}, which finds ext4 and formats
 * nothing), the superblock size against the device size (the grow check), and mount(2). Unstage:
 * umount(2), then {@code QnapNode.detach}: the map flushed through multipathd's socket, the last-LUN
 * check in sysfs, {@code iscsiadm} logout and node record delete per portal. The plugin's gRPC
 * layer and its journal are not part of this: {@code NodeLatencyHarness} measures those.
 *
 * <p><b>Shell</b>, per S1: per portal {@code iscsiadm -m discovery -t sendtargets} and {@code
 * iscsiadm -m node --login} (exit 15 accepted); the glob {@code /dev/disk/by-path/*-iscsi-<iqn>-lun-0}
 * polled until a link appears; {@code multipathd show paths format "%d %w"} polled until that
 * disk's line has a WWID; {@code /dev/mapper/<wwid>} polled; {@code blkid}; {@code mount}. Unstage:
 * {@code umount}, {@code multipath -f <wwid>}, {@code iscsiadm -m node --logout} per portal (the
 * WWID from the stage, as S1's in-memory cache has it; node records stay, as S1 leaves them). Both
 * sides poll every 100 ms (Caravan's interval; S1 polls the by-path glob every 250 ms), so the
 * ratio compares the mechanisms rather than the intervals.
 *
 * <p>Each measured operation starts from the same state on both sides: an untimed per-invocation
 * fixture does the other half, then waits until the map has both paths up (after a stage) or until
 * the sessions, the map, the disks and their by-path links are gone (after an unstage). The volume
 * is formatted once in the trial's set-up, so every measured stage is a restage (probe + mount),
 * and the set-up runs each side once, checking that it mounted the map's device at the staging path
 * and left nothing behind.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 1)
@Measurement(iterations = 5)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class IscsiStageBenchmark {
  private static final Duration TOOL_TIMEOUT = Duration.ofSeconds(60);
  private static final Duration WAIT = Duration.ofSeconds(60);
  private static final long POLL_MILLIS = 100;
  private static final long SIZE = 128L << 20;
  private static final int SESSION_EXISTS = 15; // iscsiadm: already logged in
  private static final int NO_OBJECTS = 21; // iscsiadm: no session to log out of
  private static final Path BY_PATH = Path.of("/dev/disk/by-path");

  private Path dir;
  private Path staging;
  private LioTarget target;
  private List<String> portals;
  private Iscsi iscsi;
  private Multipath multipath;
  private Wwid wwid;
  private VolumeRef volume;
  private NodeBackend node;
  private String shellWwid; // what S1 keeps in memory between its stage and unstage

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    // It starts iscsid and multipathd itself: benchmarks/guest-bench runs it in the guest.
    Requirements.require("IscsiStageBenchmark", HostRequirements.whyNoIscsi());
    Requirements.requireRoot();
    for (String tool : List.of("iscsiadm", "multipathd", "multipath", "blkid", "mount", "umount")) {
      Requirements.requireBinary(tool);
    }
    GuestIscsi.assumeAvailable(); // kernel modules, /etc/multipath.conf, iscsid and multipathd
    iscsi = Iscsi.system();
    multipath = Multipath.system();
    dir = Files.createTempDirectory("caravan-iscsi-bench");
    staging = dir.resolve("staging");
    portals = List.of(GuestIscsi.PORTAL_1, GuestIscsi.PORTAL_2);
    target = LioTarget.create("bench", SIZE, dir, portals);
    target.allow(iscsi.initiatorName());
    wwid = lunWwid();
    settleDetached();
    volume = new VolumeRef("iscsi-bench", Map.of(
        "targetIqn", target.iqn(), "lun", "0", "portals", String.join(",", portals),
        "naa", wwid.value().substring(1)));
    node = QnapBackend.systemNode(portals);

    Path device = node.attach(volume);
    check(Filesystems.formatIfEmpty(device, FsType.EXT4, List.of()) == FormatOutcome.FORMATTED,
        "the new LUN " + device + " was not blank");
    node.detach(volume);
    settleDetached();

    // Each side once, checked: it must mount the map's device and leave nothing behind. The shell
    // side first: its unstage leaves node records, which Caravan's unstage then deletes.
    shellStage();
    settleStaged();
    checkStaged("the shell-out stage");
    shellUnstage();
    settleDetached();
    caravanStage();
    settleStaged();
    checkStaged("Caravan's stage");
    caravanUnstage();
    settleDetached();
  }

  /**
   * The LUN's WWID as the kernel reads it (LIO makes it from the target's unit serial), through one
   * portal; the map multipathd makes of that one path is flushed before the logout.
   */
  private Wwid lunWwid() {
    Portal portal = Portal.parse(portals.getFirst());
    iscsi.login(target.iqn(), portal, Optional.empty());
    try {
      IscsiSession session = iscsi.session(target.iqn(), portal).orElseThrow();
      Wwid found = iscsi.awaitDisk(session, 0, WAIT).wwid().orElseThrow();
      multipath.awaitMap(found, 1, WAIT);
      poll("multipathd to remove the map of " + found, () -> {
        try {
          multipath.flush(found);
          return Optional.of(true);
        } catch (StorageException e) { // open for a moment by udev's probe
          return Optional.empty();
        }
      });
      return found;
    } finally {
      iscsi.logout(target.iqn(), portal);
      iscsi.deleteNode(target.iqn(), portal);
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    try {
      if (staging != null && MountTable.at(staging).isPresent()) {
        Mounts.unmount(staging);
      }
      if (node != null) {
        node.detach(volume); // also logs out what a failed shell run left, and deletes the records
      }
    } finally {
      if (target != null) {
        target.close();
      }
      if (dir != null) {
        try (Stream<Path> paths = Files.walk(dir)) {
          for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
            Files.deleteIfExists(p);
          }
        }
      }
    }
  }

  // ------------------------------------------------------------------------------------------
  // Caravan: the plugin's qnap node, then the node engine's filesystem steps

  Path caravanStage() {
    Path device = node.attach(volume);
    // The node engine holds the device open from the probe to the mount (so the kernel keeps the
    // superblocks the probe read cached for the size check and the mount).
    try (FileChannel held = FileChannel.open(device, StandardOpenOption.READ)) {
      FormatOutcome outcome = Filesystems.formatIfEmpty(device, FsType.EXT4, List.of());
      check(outcome == FormatOutcome.ALREADY_FORMATTED, device + " was blank at a restage");
      long fsBytes = Filesystems.size(device, FsType.EXT4);
      check(fsBytes >= BlockDevices.size(device), "the filesystem on " + device + " needs growing");
      Files.createDirectories(staging);
      Mounts.mount(device, staging, FsType.EXT4.id(), Set.of(), "");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return device;
  }

  void caravanUnstage() {
    Mounts.unmount(staging);
    node.detach(volume);
  }

  // ------------------------------------------------------------------------------------------
  // Shell: the same steps by processes, as S1 does them

  String shellStage() {
    String iqn = target.iqn();
    for (String portal : portals) {
      tool(List.of("iscsiadm", "-m", "discovery", "-t", "sendtargets", "-p", portal));
      tool(List.of("iscsiadm", "-m", "node", "-T", iqn, "-p", portal, "--login"), SESSION_EXISTS);
    }
    Path link = poll("a by-path link of " + iqn, () -> byPathLinks(iqn).stream().findFirst());
    String disk;
    try {
      disk = link.toRealPath().getFileName().toString();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    String found = poll("multipathd's WWID of " + disk, () -> pathWwid(disk));
    Path mapper = Path.of("/dev/mapper", found);
    poll(mapper.toString(), () -> Files.exists(mapper) ? Optional.of(mapper) : Optional.empty());
    String type = tool(List.of("blkid", "-p", "-s", "TYPE", "-o", "value", mapper.toString())).strip();
    check(type.equals("ext4"), mapper + " holds '" + type + "', not the ext4 the set-up made");
    try {
      Files.createDirectories(staging);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    tool(List.of("mount", "-t", "ext4", mapper.toString(), staging.toString()));
    shellWwid = found;
    return found;
  }

  void shellUnstage() {
    tool(List.of("umount", staging.toString()));
    // Right after the unmount udev's probe may hold the map open for a moment; Caravan's flush
    // retries that case for up to 15 s, and so does this side (S1 itself does not retry).
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
    while (true) {
      try {
        tool(List.of("multipath", "-f", shellWwid));
        break;
      } catch (ToolException e) {
        if (System.nanoTime() - deadline > 0) {
          throw e;
        }
        sleep();
      }
    }
    for (String portal : portals) {
      tool(List.of("iscsiadm", "-m", "node", "-T", target.iqn(), "-p", portal, "--logout"), NO_OBJECTS);
    }
  }

  private static List<Path> byPathLinks(String iqn) {
    String suffix = "-iscsi-" + iqn + "-lun-0";
    try (Stream<Path> links = Files.list(BY_PATH)) {
      return links.filter(p -> p.getFileName().toString().endsWith(suffix)).sorted().toList();
    } catch (IOException e) {
      return List.of(); // no iSCSI disk yet: udev makes the directory with the first link
    }
  }

  /** The WWID multipathd reports for {@code disk}, once it has one. */
  private static Optional<String> pathWwid(String disk) {
    String out = tool(List.of("multipathd", "show", "paths", "format", "%d %w"));
    for (String line : out.split("\n", -1)) {
      String[] fields = line.strip().split("\\s+", -1);
      if (fields.length == 2 && fields[0].equals(disk) && fields[1].startsWith("3")) {
        return Optional.of(fields[1]);
      }
    }
    return Optional.empty();
  }

  private static String tool(List<String> command, int... accepted) {
    try {
      return ToolRunner.run(command, TOOL_TIMEOUT).stdout();
    } catch (ToolException e) {
      for (int code : accepted) {
        if (e.exitCode() == code) {
          return "";
        }
      }
      throw e;
    }
  }

  // ------------------------------------------------------------------------------------------
  // Untimed: the state both sides start from, and the set-up's checks

  /** Both paths in the map and up: what a stage leaves once multipathd has caught up. */
  void settleStaged() {
    multipath.awaitMap(wwid, portals.size(), WAIT);
  }

  /** No session to the target, no map, no disk of the LUN and no by-path link left. */
  void settleDetached() {
    String iqn = target.iqn();
    poll("the sessions, map, disks and by-path links of " + iqn + " to go", () -> {
      boolean gone = iscsi.sessions().stream().noneMatch(s -> s.target().equals(iqn))
          && multipath.map(wwid).isEmpty()
          && ScsiDisks.withWwid(wwid).isEmpty()
          && byPathLinks(iqn).isEmpty();
      return gone ? Optional.of(true) : Optional.empty();
    });
  }

  private void checkStaged(String side) {
    MountEntry mount = MountTable.at(staging).orElseThrow(() -> new IllegalStateException(
        side + " mounted nothing at " + staging));
    String map = multipath.map(wwid).orElseThrow().majorMinor();
    check(mount.majorMinor().equals(map) && mount.fsType().equals("ext4"),
        side + " mounted " + mount + ", not the ext4 on the multipath map " + map);
  }

  private static <T> T poll(String what, Supplier<Optional<T>> probe) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (true) {
      Optional<T> got = probe.get();
      if (got.isPresent()) {
        return got.get();
      }
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("waited " + WAIT + " for " + what);
      }
      sleep();
    }
  }

  private static void sleep() {
    try {
      Thread.sleep(POLL_MILLIS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static void check(boolean condition, String problem) {
    if (!condition) {
      throw new IllegalStateException(problem);
    }
  }

  // ------------------------------------------------------------------------------------------
  // The measured operations; the other half is an untimed per-invocation fixture

  /** Unstaged; the Caravan stage measured is undone by Caravan after. */
  @State(Scope.Thread)
  public static class CaravanUnstagesAfter {
    @TearDown(Level.Invocation)
    public void unstage(IscsiStageBenchmark bench) {
      bench.caravanUnstage();
      bench.settleDetached();
    }
  }

  /** Staged by Caravan, settled, before the Caravan unstage measured. */
  @State(Scope.Thread)
  public static class CaravanStagedBefore {
    @Setup(Level.Invocation)
    public void stage(IscsiStageBenchmark bench) {
      bench.caravanStage();
      bench.settleStaged();
    }

    @TearDown(Level.Invocation)
    public void settle(IscsiStageBenchmark bench) {
      bench.settleDetached();
    }
  }

  /** Unstaged; the shell stage measured is undone by the shell side after. */
  @State(Scope.Thread)
  public static class ShellUnstagesAfter {
    @TearDown(Level.Invocation)
    public void unstage(IscsiStageBenchmark bench) {
      bench.shellUnstage();
      bench.settleDetached();
    }
  }

  /** Staged by the shell side, settled, before the shell unstage measured. */
  @State(Scope.Thread)
  public static class ShellStagedBefore {
    @Setup(Level.Invocation)
    public void stage(IscsiStageBenchmark bench) {
      bench.shellStage();
      bench.settleStaged();
    }

    @TearDown(Level.Invocation)
    public void settle(IscsiStageBenchmark bench) {
      bench.settleDetached();
    }
  }

  @Benchmark
  public Path stageCaravan(CaravanUnstagesAfter after) {
    return caravanStage();
  }

  @Benchmark
  public void unstageCaravan(CaravanStagedBefore before) {
    caravanUnstage();
  }

  @Benchmark
  public String stageShell(ShellUnstagesAfter after) {
    return shellStage();
  }

  @Benchmark
  public void unstageShell(ShellStagedBefore before) {
    shellUnstage();
  }
}
