package dev.caravan.storage.iscsi;

import dev.caravan.storage.block.DeviceUse;
import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.internal.sys.Sysfs;
import dev.caravan.storage.mount.MountEntry;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * What uses a session's SCSI disks, read from sysfs ({@code /sys/block/<disk>}: {@code dev}, {@code
 * holders}, partitions) and a mount table: a mount of the disk or one of its partitions, a bind mount
 * of its device node (how block volumes are published; both as {@link DeviceUse} matches them),
 * anything stacked on it, and the same for a multipath map over it. A multipath map nothing uses is not a user: it is reported as idle, to be
 * flushed before the logout (device-mapper itself refuses to remove a map a process holds open).
 *
 * <p>Only the mounts of the table given are seen: this process's mount namespace.
 */
final class DiskUsage {
  private static final String MPATH_UUID = "mpath-";

  private final Path sysBlock;
  private final List<MountEntry> mounts;

  DiskUsage(Path sysBlock, List<MountEntry> mounts) {
    this.sysBlock = sysBlock;
    this.mounts = List.copyOf(mounts);
  }

  /**
   * @param users what uses the disks, e.g. {@code sdb held by dm-3 (multipath map 36001405...)
   *     mounted at /mnt}; empty when nothing does
   * @param idleMaps the multipath maps over the disks that nothing uses
   */
  record Usage(List<String> users, List<Wwid> idleMaps) {
    Usage {
      users = List.copyOf(users);
      idleMaps = List.copyOf(idleMaps);
    }
  }

  /** The usage of the disks named {@code sdX}. */
  Usage of(List<String> disks) {
    List<String> users = new ArrayList<>();
    Set<Wwid> idle = new LinkedHashSet<>();
    for (String disk : disks) {
      Path dir = sysBlock.resolve(disk);
      List<String> parts = new ArrayList<>(List.of(disk));
      for (Path entry : Sysfs.entries(dir)) {
        String name = entry.getFileName().toString();
        if (name.startsWith(disk) && Files.exists(entry.resolve("partition"))) {
          parts.add(name);
        }
      }
      for (String part : parts) {
        Path partDir = part.equals(disk) ? dir : dir.resolve(part);
        users.addAll(direct(part, partDir));
        for (Path holder : Sysfs.entries(partDir.resolve("holders"))) {
          String h = holder.getFileName().toString();
          Optional<Wwid> map = multipathWwid(h);
          if (map.isEmpty() || !part.equals(disk)) {
            users.add(part + " held by " + h);
            continue;
          }
          List<String> mapUsers = new ArrayList<>(direct(h, sysBlock.resolve(h)));
          for (Path above : Sysfs.entries(sysBlock.resolve(h).resolve("holders"))) {
            mapUsers.add(h + " held by " + above.getFileName());
          }
          if (mapUsers.isEmpty()) {
            idle.add(map.get());
          } else {
            for (String u : mapUsers) {
              users.add(part + " in multipath map " + map.get() + ": " + u);
            }
          }
        }
      }
    }
    return new Usage(users, List.copyOf(idle));
  }

  /**
   * Mounts of the device {@code name} and bind mounts of its device node, as {@link DeviceUse}
   * defines them, each prefixed with the device's name.
   */
  private List<String> direct(String name, Path dir) {
    Optional<String> dev = Sysfs.attribute(dir.resolve("dev"));
    if (dev.isEmpty()) {
      return List.of(); // gone as we looked
    }
    return DeviceUse.mountsAndBinds(name, dev.get(), mounts, DeviceUse::nodeAt).stream()
        .map(use -> name + " " + use)
        .toList();
  }

  /** The WWID of the multipath map {@code dm-N}; empty for any other device. */
  private Optional<Wwid> multipathWwid(String name) {
    if (!name.startsWith("dm-")) {
      return Optional.empty();
    }
    Optional<String> uuid = Sysfs.attribute(sysBlock.resolve(name).resolve("dm/uuid"));
    if (uuid.isEmpty() || !uuid.get().startsWith(MPATH_UUID)) {
      return Optional.empty(); // LVM, dm-crypt, a kpartx partition ("part1-mpath-..."): a user
    }
    try {
      return Optional.of(Wwid.of(uuid.get().substring(MPATH_UUID.length())));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }
}
