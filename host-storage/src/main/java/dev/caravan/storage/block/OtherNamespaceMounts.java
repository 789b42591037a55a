package dev.caravan.storage.block;

import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Mounts of a device in mount namespaces other than this process's. A process that unshares its
 * mounts copies every mount there is; with private propagation, an unmount here no longer reaches its
 * copy, which keeps the filesystem, and with it the device, busy for as long as the namespace lives.
 * Each namespace is read once, through the first process found in it (the lowest pid).
 */
final class OtherNamespaceMounts {
  private static final Path PROC = Path.of("/proc");

  private OtherNamespaceMounts() {}

  /** {@code mounted at /p in the mount namespace of pid N (comm)} for each mount of {@code majorMinor}. */
  static List<String> of(String majorMinor) {
    Set<Path> seen = new HashSet<>();
    try {
      seen.add(Files.readSymbolicLink(PROC.resolve("self/ns/mnt")));
    } catch (IOException e) {
      return List.of(); // no /proc to ask
    }
    List<String> users = new ArrayList<>();
    for (long pid : pids()) {
      Path proc = PROC.resolve(Long.toString(pid));
      try {
        if (!seen.add(Files.readSymbolicLink(proc.resolve("ns/mnt")))) {
          continue;
        }
        List<MountEntry> table =
            MountTable.parse(new String(Files.readAllBytes(proc.resolve("mountinfo")), StandardCharsets.UTF_8));
        String comm = Files.readString(proc.resolve("comm"), StandardCharsets.UTF_8).strip();
        for (MountEntry m : table) {
          if (m.majorMinor().equals(majorMinor)) {
            users.add("mounted at " + m.mountPoint() + " in the mount namespace of pid " + pid + " (" + comm + ")");
          }
        }
      } catch (IOException | RuntimeException e) {
        // the process ended as we looked, or is not ours to see: its namespace, if any, is read
        // through another of its processes or not at all
      }
    }
    return users;
  }

  private static List<Long> pids() {
    List<Long> pids = new ArrayList<>();
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(PROC)) {
      for (Path entry : entries) {
        String name = entry.getFileName().toString();
        if (!name.isEmpty() && name.chars().allMatch(Character::isDigit)) {
          pids.add(Long.parseLong(name));
        }
      }
    } catch (IOException e) {
      return List.of();
    }
    pids.sort(null);
    return pids;
  }
}
