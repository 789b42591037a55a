package dev.caravan.storage.testing;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * Skips tests this host cannot run, saying what is missing. On a CI machine (root, loop driver,
 * e2fsprogs and xfsprogs installed) nothing is skipped.
 */
public final class HostRequirements {
  private static final int CAP_SYS_RESOURCE = 24;

  private HostRequirements() {}

  /** Root, and the loop driver's control device. */
  public static void assumeRootWithLoopDevices() {
    assumeTrue(isRoot(), "needs root (uid 0): runs mount(2) and loop ioctls");
    assumeTrue(hasLoopControl(), "needs /dev/loop-control (the loop driver: modprobe loop)");
  }

  /** Whether tests here can create loop devices and mounts at all. */
  static boolean rootWithLoopDevices() {
    return isRoot() && hasLoopControl();
  }

  private static boolean hasLoopControl() {
    return Files.isWritable(Path.of("/dev/loop-control"));
  }

  /** A helper binary on PATH, e.g. {@code mkfs.xfs}. */
  public static void assumeTool(String tool, String debianPackage) {
    boolean found =
        Stream.of(System.getenv().getOrDefault("PATH", "").split(":", -1))
            .filter(dir -> !dir.isEmpty())
            .anyMatch(dir -> Files.isExecutable(Path.of(dir, tool)));
    assumeTrue(found, "needs " + tool + " on PATH (apt-get install " + debianPackage + ")");
  }

  /**
   * CAP_SYS_RESOURCE, which the kernel wants for online ext4 resizing (EXT4_IOC_RESIZE_FS) and
   * which some container sandboxes drop even for root.
   */
  public static void assumeCapSysResource() {
    long effective = Long.parseLong(status("CapEff:"), 16);
    assumeTrue(
        (effective & (1L << CAP_SYS_RESOURCE)) != 0,
        "needs CAP_SYS_RESOURCE (online ext4 resize); this process's effective set lacks it");
  }

  private static boolean isRoot() {
    return status("Uid:").split("\\s+", -1)[1].equals("0"); // effective uid
  }

  /** The value of a /proc/self/status line, such as the uids after {@code "Uid:"}. */
  private static String status(String key) {
    try {
      return Files.readAllLines(Path.of("/proc/self/status")).stream()
          .filter(line -> line.startsWith(key))
          .map(line -> line.substring(key.length()).strip())
          .findFirst()
          .orElseThrow();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
