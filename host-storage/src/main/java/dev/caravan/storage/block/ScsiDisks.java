package dev.caravan.storage.block;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.internal.Pauses;
import dev.caravan.storage.internal.sys.Sysfs;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * The host's SCSI disks, read from sysfs ({@code /sys/bus/scsi/devices}), and the rescans the SCSI
 * layer offers there. Nothing is run: this is what {@code lsscsi}, {@code scsi_id} and {@code
 * rescan-scsi-bus} read and write.
 */
public final class ScsiDisks {
  static final Path SYSFS_DEVICES = Path.of("/sys/bus/scsi/devices");
  private static final Path SCSI_HOSTS = Path.of("/sys/class/scsi_host");
  private static final Pattern ADDRESS = Pattern.compile("\\d+:\\d+:\\d+:\\d+");
  private static final Duration POLL = Duration.ofMillis(100);

  private ScsiDisks() {}

  /** Every SCSI device that has a block device, ordered by address. */
  public static List<ScsiDisk> list() {
    List<ScsiDisk> disks = new ArrayList<>();
    for (Path dir : Sysfs.entries(SYSFS_DEVICES)) {
      if (ADDRESS.matcher(dir.getFileName().toString()).matches()) {
        read(dir).ifPresent(disks::add);
      }
    }
    disks.sort(Comparator.comparing(ScsiDisk::address, ScsiDisks::compareAddresses));
    return List.copyOf(disks);
  }

  /** Every path to the logical unit {@code wwid}: one per session or port it is reachable through. */
  public static List<ScsiDisk> withWwid(Wwid wwid) {
    return list().stream().filter(disk -> disk.wwid().equals(Optional.of(wwid))).toList();
  }

  /** The disk at {@code host:channel:target:lun}, if there is one with a block device. */
  public static Optional<ScsiDisk> at(String address) {
    if (!ADDRESS.matcher(address).matches()) {
      throw new IllegalArgumentException("not a SCSI address (host:channel:target:lun): " + address);
    }
    return read(SYSFS_DEVICES.resolve(address));
  }

  /**
   * Waits until at least {@code paths} disks carry {@code wwid} (udev and the SCSI scan work
   * asynchronously after a login), and returns them.
   *
   * @throws StorageException after {@code timeout}, naming how many paths appeared
   */
  public static List<ScsiDisk> awaitWwid(Wwid wwid, int paths, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      List<ScsiDisk> found = withWwid(wwid);
      if (found.size() >= paths) {
        return found;
      }
      if (System.nanoTime() - deadline > 0) {
        throw new StorageException(
            "found %d of %d paths to the SCSI disk with WWID %s after %s: %s"
                .formatted(found.size(), paths, wwid, timeout, found));
      }
      Pauses.pause(POLL, "interrupted");
    }
  }

  /**
   * Makes the kernel re-read the disk's capacity and identity ({@code device/rescan}): how a LUN
   * grown on the storage side becomes visible on this path.
   */
  public static void rescan(ScsiDisk disk) {
    write(SYSFS_DEVICES.resolve(disk.address()).resolve("rescan"), "1");
  }

  /**
   * Asks SCSI host {@code host} to look for logical units it does not know yet ({@code - - -} to
   * its {@code scan} attribute: every channel, target and LUN).
   */
  public static void scanHost(int host) {
    write(SCSI_HOSTS.resolve("host" + host).resolve("scan"), "- - -");
  }

  /**
   * Reads one device directory of {@code /sys/bus/scsi/devices}; empty when it is gone or has no
   * block device (a tape, an enclosure, a LUN still being probed).
   */
  static Optional<ScsiDisk> read(Path dir) {
    List<Path> blocks = Sysfs.entries(dir.resolve("block"));
    if (blocks.isEmpty()) {
      return Optional.empty();
    }
    Path device = Path.of("/dev").resolve(blocks.getFirst().getFileName().toString());
    try {
      Optional<Wwid> wwid = readBytes(dir.resolve("vpd_pg83")).flatMap(Wwid::fromVpdPage83);
      return Optional.of(
          new ScsiDisk(
              dir.getFileName().toString(),
              device,
              wwid,
              attribute(dir, "vendor"),
              attribute(dir, "model"),
              attribute(dir, "state")));
    } catch (GoneException e) {
      return Optional.empty();
    }
  }

  private static String attribute(Path dir, String name) {
    return readBytes(dir.resolve(name))
        .map(bytes -> new String(bytes, StandardCharsets.UTF_8).strip())
        .orElse("");
  }

  /** The file's content; empty when the attribute does not exist on this device. */
  private static Optional<byte[]> readBytes(Path file) {
    try {
      return Optional.of(Files.readAllBytes(file));
    } catch (NoSuchFileException e) {
      if (!Files.isDirectory(file.getParent())) {
        throw new GoneException();
      }
      return Optional.empty();
    } catch (IOException e) {
      // Some attributes (vpd pages of a device the target no longer answers for) fail with EIO.
      return Optional.empty();
    }
  }

  private static void write(Path attribute, String value) {
    try {
      Files.writeString(attribute, value, StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new StorageException("cannot write '" + value + "' to " + attribute + ": " + e, e);
    }
  }

  private static int compareAddresses(String a, String b) {
    String[] x = a.split(":", -1);
    String[] y = b.split(":", -1);
    for (int i = 0; i < x.length; i++) {
      int c = Long.compare(Long.parseLong(x[i]), Long.parseLong(y[i]));
      if (c != 0) {
        return c;
      }
    }
    return 0;
  }

  /** The device disappeared while being read (a logout, a removed LUN). */
  private static final class GoneException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    GoneException() {
      super(null, null, false, false);
    }
  }
}
