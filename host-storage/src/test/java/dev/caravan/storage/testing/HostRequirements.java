package dev.caravan.storage.testing;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.storage.HostCapabilities;

/**
 * Skips tests this host cannot run, saying what is missing; the facts come from {@link
 * HostCapabilities}, as in csi-server's tests. On a CI machine (root, loop driver, e2fsprogs and
 * xfsprogs installed) only what needs CAP_SYS_RESOURCE is skipped, and it runs in the guest.
 */
public final class HostRequirements {
  private HostRequirements() {}

  /** Root, and the loop driver's control device. */
  public static void assumeRootWithLoopDevices() {
    HostCapabilities host = HostCapabilities.current();
    assumeTrue(host.isRoot(), "needs root (uid 0): runs mount(2) and loop ioctls");
    assumeTrue(host.hasLoopDevices(), "needs /dev/loop-control (the loop driver: modprobe loop)");
  }

  /** Whether tests here can create loop devices and mounts at all. */
  static boolean rootWithLoopDevices() {
    HostCapabilities host = HostCapabilities.current();
    return host.isRoot() && host.hasLoopDevices();
  }

  /** A helper binary on PATH, e.g. {@code mkfs.xfs}. */
  public static void assumeTool(String tool, String debianPackage) {
    assumeTrue(
        HostCapabilities.current().tool(tool).isPresent(),
        "needs " + tool + " on PATH (apt-get install " + debianPackage + ")");
  }

  /**
   * CAP_SYS_RESOURCE, which the kernel wants for online ext4 resizing (EXT4_IOC_RESIZE_FS) and
   * which some container sandboxes drop even for root.
   */
  public static void assumeCapSysResource() {
    assumeTrue(
        HostCapabilities.current().canGrowMountedExt4(),
        "needs CAP_SYS_RESOURCE (online ext4 resize); this process's effective set lacks it");
  }
}
