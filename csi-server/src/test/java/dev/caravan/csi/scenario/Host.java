package dev.caravan.csi.scenario;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.storage.HostCapabilities;
import java.util.Optional;

/**
 * What the host offers, as JUnit assumptions: a test that needs more is skipped with a message
 * naming what is missing. The facts come from {@link HostCapabilities} (the same ones host-storage's
 * tests and the backends' readiness see), so no two tests disagree about this machine.
 */
final class Host {
  private Host() {}

  static boolean isRoot() {
    return HostCapabilities.current().isRoot();
  }

  static boolean hasTool(String name) {
    return HostCapabilities.current().tool(name).isPresent();
  }

  /** Why volumes cannot be staged here (root, loop devices, mkfs.ext4); empty when they can. */
  static Optional<String> whyNoLoopAndExt4() {
    HostCapabilities host = HostCapabilities.current();
    if (!host.isRoot()) {
      return Optional.of("needs root (mount(2) and loop devices)");
    }
    if (!host.hasLoopDevices()) {
      return Optional.of("needs loop device support (/dev/loop-control)");
    }
    if (host.tool("mkfs.ext4").isEmpty() || host.tool("resize2fs").isEmpty()) {
      return Optional.of("needs mkfs.ext4 and resize2fs (e2fsprogs)");
    }
    return Optional.empty();
  }

  /** Why real ZFS is not usable here; empty in the guest of {@code scripts/guest-suite}. */
  static Optional<String> whyNoZfs() {
    HostCapabilities host = HostCapabilities.current();
    if (!host.hasZfsModule() || !host.isRoot()) {
      return Optional.of("needs real ZFS (/dev/zfs, as root): it runs in the guest kernel of scripts/guest-suite");
    }
    if (System.getenv("CARAVAN_TEST_POOL") == null) {
      return Optional.of("needs the test pool that scripts/guest-test creates (CARAVAN_TEST_POOL is unset)");
    }
    return Optional.empty();
  }

  /** Root, loop devices and mkfs.ext4: what staging a volume needs. */
  static void requireLoopAndExt4() {
    Optional<String> why = whyNoLoopAndExt4();
    assumeTrue(why.isEmpty(), () -> why.orElseThrow());
  }

  /** CAP_SYS_RESOURCE (bit 24): ext4 online resize (EXT4_IOC_RESIZE_FS) needs it; some containers drop it. */
  static boolean hasCapSysResource() {
    return HostCapabilities.current().canGrowMountedExt4();
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
