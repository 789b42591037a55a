package dev.caravan.csi;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;

/** What the host offers; tests that need more skip with a message naming what is missing. */
final class Host {
  private Host() {}

  static boolean isRoot() {
    return "root".equals(System.getProperty("user.name"));
  }

  static boolean hasTool(String name) {
    for (String dir : new String[] {"/usr/sbin", "/sbin", "/usr/bin", "/bin"}) {
      if (Files.isExecutable(Path.of(dir, name))) {
        return true;
      }
    }
    return false;
  }

  /** Root, loop devices and mkfs.ext4: what staging a volume needs. */
  static void requireLoopAndExt4() {
    assumeTrue(isRoot(), "needs root (mount(2) and loop devices)");
    assumeTrue(Files.exists(Path.of("/dev/loop-control")), "needs loop device support (/dev/loop-control)");
    assumeTrue(hasTool("mkfs.ext4") && hasTool("resize2fs"), "needs mkfs.ext4 and resize2fs (e2fsprogs)");
  }

  /** CAP_SYS_RESOURCE (bit 24): ext4 online resize (EXT4_IOC_RESIZE_FS) needs it; some containers drop it. */
  static boolean hasCapSysResource() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("CapEff:")) {
          long caps = Long.parseUnsignedLong(line.substring(7).trim(), 16);
          return (caps & (1L << 24)) != 0;
        }
      }
    } catch (java.io.IOException e) {
      return false;
    }
    return false;
  }

  /** What growing a mounted filesystem of {@code fs} needs. */
  static void requireOnlineGrow(String fs) {
    if (fs.equals("ext4")) {
      assumeTrue(hasCapSysResource(), "needs CAP_SYS_RESOURCE for ext4 online resize (this process lacks it)");
    }
  }

  static void requireXfs() {
    requireLoopAndExt4();
    assumeTrue(hasTool("mkfs.xfs") && hasTool("xfs_growfs"), "needs mkfs.xfs and xfs_growfs (xfsprogs)");
  }
}
