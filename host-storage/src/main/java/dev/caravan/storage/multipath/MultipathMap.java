package dev.caravan.storage.multipath;

import dev.caravan.storage.block.Wwid;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;

/**
 * A device-mapper multipath map, as the kernel and multipathd see it right now.
 *
 * @param name the map's device-mapper name (the WWID itself unless {@code user_friendly_names} or
 *     an alias names it otherwise)
 * @param wwid the WWID of the LUN it leads to
 * @param device the node to use: {@code /dev/mapper/<name>}, or {@code /dev/dm-N} when udev has
 *     not made that link
 * @param majorMinor the map's {@code major:minor}, as the mount table names it
 * @param paths its paths, in the kernel's order
 * @param holders the devices stacked on it ({@code dm-N} of partitions, LVM volumes, ...)
 */
public record MultipathMap(
    String name, Wwid wwid, Path device, String majorMinor, List<MultipathPath> paths, List<String> holders) {
  public MultipathMap {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(wwid, "wwid");
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(majorMinor, "majorMinor");
    paths = List.copyOf(paths);
    holders = List.copyOf(holders);
  }

  /** The paths I/O can go down now. */
  public List<MultipathPath> upPaths() {
    return paths.stream().filter(MultipathPath::isUp).toList();
  }
}
