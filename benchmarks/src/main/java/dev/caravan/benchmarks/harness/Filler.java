package dev.caravan.benchmarks.harness;

import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * Unrelated mounts, so that the host's mount table has as many lines as a busy Nomad node (hundreds):
 * what reading the whole table costs grows with it, what statx costs does not. Each is a bind of one
 * empty directory onto {@code dir/m-<i>}.
 */
final class Filler {
  private Filler() {}

  /**
   * Adds or removes fillers under {@code dir} until the table has {@code lines} lines (never fewer
   * than it has without fillers); returns how many it has.
   */
  static int fill(Path dir, int lines) throws IOException {
    Path source = Files.createDirectories(dir.resolve("source"));
    List<Path> ours = ours(dir);
    int now = MountTable.read().size();
    for (int i = ours.size() - 1; i >= 0 && now > lines; i--, now--) {
      Mounts.unmount(ours.get(i));
    }
    for (int i = ours.size(); now < lines; i++, now++) {
      Path m = Files.createDirectories(dir.resolve("m-" + i));
      Mounts.bind(source, m, false);
    }
    return MountTable.read().size();
  }

  private static List<Path> ours(Path dir) throws IOException {
    try (Stream<Path> list = Files.list(dir)) {
      return list.filter(p -> p.getFileName().toString().startsWith("m-")).filter(MountTable::isMountPoint)
          .sorted(Comparator.comparingInt(p -> Integer.parseInt(p.getFileName().toString().substring(2))))
          .toList();
    }
  }
}
