package dev.caravan.storage.multipath;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.DeviceUse;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.internal.Pauses;
import dev.caravan.storage.internal.sys.Sysfs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The host's device-mapper multipath maps, found by the WWID of the LUN behind them.
 *
 * <p>Maps and their paths are read from sysfs ({@code /sys/block/dm-N/dm}, {@code slaves}, {@code
 * holders}); the paths' states come from multipathd over its command socket (see {@link
 * Multipathd}), and a map is removed by asking multipathd to ({@code del map}), so that the daemon
 * that made it knows it is gone. No {@code multipath} or {@code multipathd} process is started:
 * multipathd must be running, and configured to make maps for the LUNs in question (for example
 * {@code find_multipaths no}, or their WWIDs in {@code /etc/multipath/wwids}).
 */
public final class Multipath {
  private static final Path SYS_BLOCK = Path.of("/sys/block");
  private static final String UUID_PREFIX = "mpath-";
  private static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);
  private static final Duration POLL = Duration.ofMillis(100);
  private static final Duration OPEN_PATIENCE = Duration.ofSeconds(15);
  private static final String PATH_FORMAT = "%d|%i|%w|%t|%T|%o";

  private final Multipathd multipathd;

  private Multipath(Multipathd multipathd) {
    this.multipathd = multipathd;
  }

  /** The host's multipathd, each command given 10 seconds to answer. */
  public static Multipath system() {
    return new Multipath(new Multipathd(Multipathd.SOCKET, DEFAULT_TIMEOUT));
  }

  /** Every multipath map on the host, with its paths' states. */
  public List<MultipathMap> maps() {
    List<DmMap> found = dmMaps();
    if (found.isEmpty()) {
      return List.of();
    }
    Map<String, String[]> states = pathStates();
    return found.stream().map(map -> map.toMap(states)).toList();
  }

  /** The map of the LUN {@code wwid}, if there is one. */
  public Optional<MultipathMap> map(Wwid wwid) {
    Optional<DmMap> found = dmMap(wwid);
    return found.isEmpty() ? Optional.empty() : Optional.of(found.get().toMap(pathStates()));
  }

  /**
   * The WWID of the multipath map at {@code device} (a {@code /dev/mapper} name, {@code /dev/dm-N},
   * or a link to either), as the kernel names that map ({@code dm/uuid} of the device's
   * major:minor): the check for a device recorded earlier, whose {@code dm-N} the kernel may since
   * have given to another map. Empty when the device is gone or is not a multipath map.
   */
  public static Optional<Wwid> wwidOf(Path device) {
    String majorMinor;
    try {
      majorMinor = BlockDevices.majorMinor(device);
    } catch (StorageException e) {
      return Optional.empty(); // gone (ENOENT) or not a block device
    }
    return Sysfs.attribute(Path.of("/sys/dev/block", majorMinor, "dm/uuid"))
        .filter(uuid -> uuid.startsWith(UUID_PREFIX))
        .flatMap(uuid -> {
          try {
            return Optional.of(Wwid.of(uuid.substring(UUID_PREFIX.length())));
          } catch (IllegalArgumentException e) {
            return Optional.empty();
          }
        });
  }

  /**
   * Waits until the map of {@code wwid} exists with at least {@code paths} paths up, and returns it.
   * multipathd builds and extends maps on its own when the kernel announces new paths; this only
   * watches.
   *
   * @throws StorageException after {@code timeout}, saying what there was
   */
  public MultipathMap awaitMap(Wwid wwid, int paths, Duration timeout) {
    if (paths < 1) {
      throw new IllegalArgumentException("paths must be at least 1: " + paths);
    }
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Optional<DmMap> found = dmMap(wwid);
      if (found.isPresent() && found.get().slaves().size() >= paths) {
        MultipathMap map = found.get().toMap(pathStates());
        if (map.upPaths().size() >= paths) {
          return map;
        }
      }
      if (System.nanoTime() - deadline > 0) {
        String seen =
            found.isEmpty()
                ? "no map (is multipathd configured to make maps for it, e.g. find_multipaths no?)"
                : "map " + found.get().toMap(pathStates());
        throw new StorageException(
            "no multipath map for WWID %s with %d path(s) up after %s: %s"
                .formatted(wwid, paths, timeout, seen));
      }
      sleep();
    }
  }

  /**
   * Removes the map of {@code wwid} (multipathd's {@code del map}), so that its paths can be logged
   * out or removed. Returns false when there was no map. Refuses while the map is in use as {@link
   * DeviceUse} defines it: mounted, its node bound somewhere (a block publish), anything stacked on it,
   * or opened exclusively; the paths themselves are left alone.
   *
   * <p>multipathd also refuses while any process has the map open, and right after an unmount one
   * always has for a moment: closing a device that was open for writing makes udev probe it. So a
   * refusal with no mount and no holder is asked again for up to 15 seconds before it is reported.
   *
   * @throws MapInUseException when something uses the map
   * @throws StorageException when multipathd still refuses after that (someone keeps the device open)
   */
  public boolean flush(Wwid wwid) {
    long deadline = System.nanoTime() + OPEN_PATIENCE.toNanos();
    while (true) {
      Optional<DmMap> found = dmMap(wwid);
      if (found.isEmpty()) {
        return false;
      }
      DmMap map = found.get();
      List<String> users = users(map);
      if (!users.isEmpty()) {
        throw new MapInUseException(wwid, map.name(), users);
      }
      String reply = multipathd.send("del map " + map.name()).strip();
      if (reply.equals("ok") || dmMap(wwid).isEmpty()) {
        return true; // removed, by us or meanwhile by someone else
      }
      if (System.nanoTime() - deadline > 0) {
        throw new StorageException(
            "multipathd refused to remove map " + map.name() + " (WWID " + wwid + ") for " + OPEN_PATIENCE
                + ": " + reply + " (is the device open?)");
      }
      sleep();
    }
  }

  /** What uses the map, as {@link DeviceUse} defines it for every destructive step. */
  private static List<String> users(DmMap map) {
    return DeviceUse.of(Path.of("/dev", map.kernelName())).users();
  }

  /**
   * Makes the map of {@code wwid} take the size its paths have now (multipathd's {@code resize map}):
   * after the LUN grew on the target and every path was rescanned. Returns false when there is no
   * map; a map whose size already matches its paths is left as it is, without asking multipathd.
   *
   * @throws StorageException when multipathd refuses (e.g. its paths disagree on the size)
   */
  public boolean resize(Wwid wwid) {
    Optional<DmMap> found = dmMap(wwid);
    if (found.isEmpty()) {
      return false;
    }
    if (sizeMatchesItsPaths(found.get())) {
      // Nothing to do, and nothing to ask: multipathd can refuse a resize while it still sets up a
      // map it has just made, which is exactly when a stage refreshes a freshly attached LUN.
      return true;
    }
    String reply = multipathd.send("resize map " + found.get().name()).strip();
    if (!reply.equals("ok")) {
      throw new StorageException(
          "multipathd refused to resize map " + found.get().name() + " (WWID " + wwid + "): " + reply);
    }
    return true;
  }

  // ---------------------------------------------------------------------------------------------
  // sysfs

  /** Whether the map's size (512-byte sectors, sysfs) is already that of each of its paths. */
  private static boolean sizeMatchesItsPaths(DmMap map) {
    Optional<String> size = Sysfs.attribute(SYS_BLOCK.resolve(map.kernelName()).resolve("size"));
    if (size.isEmpty() || map.slaves().isEmpty()) {
      return false;
    }
    for (String slave : map.slaves()) {
      if (!size.equals(Sysfs.attribute(SYS_BLOCK.resolve(slave).resolve("size")))) {
        return false;
      }
    }
    return true;
  }

  /** A multipath map as sysfs shows it. */
  private record DmMap(
      String kernelName, String name, Wwid wwid, String majorMinor, List<String> slaves, List<String> holders) {
    MultipathMap toMap(Map<String, String[]> states) {
      List<MultipathPath> paths = new ArrayList<>();
      for (String slave : slaves) {
        String[] s = states.get(slave);
        paths.add(
            new MultipathPath(
                Path.of("/dev", slave),
                s == null ? "" : s[1],
                s == null ? PathState.UNKNOWN : PathState.parse(s[3]),
                s == null ? "unknown" : s[4],
                s == null ? "unknown" : s[5]));
      }
      Path mapper = Path.of("/dev/mapper", name);
      Path device = Files.exists(mapper) ? mapper : Path.of("/dev", kernelName);
      return new MultipathMap(name, wwid, device, majorMinor, paths, holders);
    }
  }

  private static Optional<DmMap> dmMap(Wwid wwid) {
    return dmMaps().stream().filter(m -> m.wwid().equals(wwid)).findFirst();
  }

  private static List<DmMap> dmMaps() {
    List<DmMap> maps = new ArrayList<>();
    for (Path dir : Sysfs.entries(SYS_BLOCK)) {
      String kernelName = dir.getFileName().toString();
      if (!kernelName.startsWith("dm-")) {
        continue;
      }
      Optional<String> uuid = Sysfs.attribute(dir.resolve("dm/uuid"));
      if (uuid.isEmpty() || !uuid.get().startsWith(UUID_PREFIX)) {
        continue; // not a multipath map: LVM, crypt, a kpartx partition ("part1-mpath-...")
      }
      Optional<String> name = Sysfs.attribute(dir.resolve("dm/name"));
      Optional<String> dev = Sysfs.attribute(dir.resolve("dev"));
      if (name.isEmpty() || dev.isEmpty()) {
        continue; // removed while we looked
      }
      Wwid wwid;
      try {
        wwid = Wwid.of(uuid.get().substring(UUID_PREFIX.length()));
      } catch (IllegalArgumentException e) {
        continue;
      }
      maps.add(
          new DmMap(
              kernelName,
              name.get(),
              wwid,
              dev.get(),
              names(dir.resolve("slaves")),
              names(dir.resolve("holders"))));
    }
    return maps;
  }

  /**
   * multipathd's view of every path, by device name: {@code [dev, hcil, wwid, dm_st, chk_st,
   * dev_st]}.
   */
  private Map<String, String[]> pathStates() {
    String reply = multipathd.send("show paths raw format \"" + PATH_FORMAT + "\"");
    Map<String, String[]> states = new HashMap<>();
    for (String line : reply.lines().toList()) {
      String[] fields = line.split("\\|", -1);
      if (fields.length == 6) {
        for (int i = 0; i < fields.length; i++) {
          fields[i] = fields[i].strip();
        }
        states.put(fields[0], fields);
      }
    }
    return states;
  }

  private static List<String> names(Path dir) {
    return Sysfs.entries(dir).stream().map(p -> p.getFileName().toString()).toList();
  }


  private static void sleep() {
    Pauses.pause(POLL, "interrupted");
  }
}
