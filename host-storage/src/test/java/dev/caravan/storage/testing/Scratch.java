package dev.caravan.storage.testing;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.file.SparseFiles;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A directory for one test's images and mount points, and the guarantee that the test left nothing
 * behind: after each test, a mount under the directory or a loop device backed by a file in it is a
 * leak. Leaks are cleaned up (the machine stays usable), then fail the test.
 *
 * <p>Only what lives under this directory is examined or touched: other test runs may be using loop
 * devices and mounts on the same machine at the same time.
 */
public final class Scratch implements BeforeEachCallback, AfterEachCallback {
  private Path dir;

  public Path dir() {
    return dir;
  }

  /** A new sparse file of {@code size} bytes. */
  public Path image(String name, long size) {
    Path image = dir.resolve(name);
    SparseFiles.create(image, size);
    return image;
  }

  public Path directory(String name) throws IOException {
    return Files.createDirectories(dir.resolve(name));
  }

  @Override
  public void beforeEach(ExtensionContext context) throws IOException {
    dir = Files.createTempDirectory("caravan-host-storage-").toRealPath();
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    List<MountEntry> mounts = ourMounts();
    // Deepest first; a stacked mount point is unmounted until nothing is left there.
    mounts.stream()
        .map(MountEntry::mountPoint)
        .distinct()
        .sorted(Comparator.comparingInt(Path::getNameCount).reversed())
        .forEach(
            mountPoint -> {
              while (Mounts.unmount(mountPoint)) {
                // unmounting the next one down
              }
            });
    // Only root could have attached any, and only root can list them (LOOP_GET_STATUS64).
    List<LoopDevice> loops = HostRequirements.rootWithLoopDevices() ? ourLoopDevices() : List.of();
    loops.forEach(LoopDevices::detach);
    if (ourMounts().isEmpty()) {
      try (Stream<Path> files = Files.walk(dir)) {
        for (Path file : files.sorted(Comparator.reverseOrder()).toList()) {
          Files.delete(file);
        }
      }
    }
    assertThat(mounts).as("mounts the test left under %s", dir).isEmpty();
    assertThat(loops).as("loop devices the test left on files in %s", dir).isEmpty();
    assertThat(openDescriptors())
        .as("descriptors this JVM still has open on loop devices or files in %s", dir)
        .isEmpty();
  }

  private List<Path> openDescriptors() throws IOException {
    List<Path> open = new ArrayList<>();
    try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
      for (Path fd : fds.toList()) {
        try {
          Path target = Files.readSymbolicLink(fd);
          if (target.startsWith(dir) || target.toString().startsWith("/dev/loop")) {
            open.add(target);
          }
        } catch (NoSuchFileException e) {
          // closed since listed (or the directory stream's own descriptor)
        }
      }
    }
    return open;
  }

  private List<MountEntry> ourMounts() {
    return MountTable.read().stream().filter(m -> m.mountPoint().startsWith(dir)).toList();
  }

  /**
   * Loop devices on our files. A detach completes at the device's last close, and another process
   * may hold it open for a moment (listing devices opens each one), so a device is only a leak if
   * it stays attached for a while.
   */
  private List<LoopDevice> ourLoopDevices() throws InterruptedException {
    List<LoopDevice> ours = new ArrayList<>();
    for (int attempt = 0; attempt < 50; attempt++) {
      ours = LoopDevices.list().stream().filter(l -> l.backingFile().startsWith(dir)).toList();
      if (ours.isEmpty()) {
        break;
      }
      Thread.sleep(100);
    }
    return ours;
  }
}
