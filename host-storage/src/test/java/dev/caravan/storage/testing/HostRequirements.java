package dev.caravan.storage.testing;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.storage.HostCapabilities;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Whether a test can run on this machine, and if not, why: the one place every module's tests ask
 * (host-storage's, csi-server's, the benchmarks' and the examples' through this module's test jar).
 * Each capability has one definition, as a {@code whyNo...} answer (empty when the machine has it)
 * and an {@code assume...} that skips the calling test with that answer as its reason. The facts come
 * from {@link HostCapabilities}, the same ones the backends' readiness sees, so no two tests disagree
 * about this machine.
 *
 * <p>On a CI machine (root, loop driver, e2fsprogs and xfsprogs installed) only what needs
 * CAP_SYS_RESOURCE, the guest kernel, real ZFS or iSCSI is skipped; those run in the guest of
 * {@code scripts/guest-suite}, where nothing selected may skip.
 */
public final class HostRequirements {
  private static final String GUEST_SUITE = "scripts/guest-suite";

  private HostRequirements() {}

  // ---- root --------------------------------------------------------------------------------------

  /** Effective uid 0: mount(2), loop ioctls, device-mapper and ZFS ioctls need it. */
  public static Optional<String> whyNotRoot() {
    return HostCapabilities.current().isRoot()
        ? Optional.empty()
        : Optional.of("needs root (effective uid 0): runs mount(2) and loop ioctls");
  }

  public static boolean isRoot() {
    return whyNotRoot().isEmpty();
  }

  public static void assumeRoot() {
    assume(whyNotRoot());
  }

  // ---- loop devices ------------------------------------------------------------------------------

  /** Root, and the loop driver's control device. */
  public static Optional<String> whyNoLoopDevices() {
    return whyNotRoot().or(() -> HostCapabilities.current().hasLoopDevices()
        ? Optional.empty()
        : Optional.of("needs /dev/loop-control (the loop driver: modprobe loop)"));
  }

  /** Whether tests here can create loop devices and mounts at all. */
  public static boolean rootWithLoopDevices() {
    return whyNoLoopDevices().isEmpty();
  }

  public static void assumeRootWithLoopDevices() {
    assume(whyNoLoopDevices());
  }

  /** Loop devices, and ext4's tools (mkfs.ext4, resize2fs): what staging a volume on this host needs. */
  public static Optional<String> whyNoLoopAndExt4() {
    return whyNoLoopDevices().or(() -> whyNoTools("e2fsprogs", "mkfs.ext4", "resize2fs"));
  }

  public static void assumeLoopAndExt4() {
    assume(whyNoLoopAndExt4());
  }

  // ---- filesystems and tools ---------------------------------------------------------------------

  /** xfs's tools: mkfs.xfs and xfs_growfs. */
  public static Optional<String> whyNoXfs() {
    return whyNoTools("xfsprogs", "mkfs.xfs", "xfs_growfs");
  }

  public static void assumeXfs() {
    assume(whyNoXfs());
  }

  public static boolean hasTool(String tool) {
    return HostCapabilities.current().tool(tool).isPresent();
  }

  /** Helper binaries on PATH, e.g. {@code mkfs.xfs}, all from one Debian package. */
  public static Optional<String> whyNoTools(String debianPackage, String... tools) {
    List<String> missing = List.of(tools).stream().filter(t -> !hasTool(t)).toList();
    return missing.isEmpty()
        ? Optional.empty()
        : Optional.of("needs " + String.join(" and ", missing) + " on PATH (apt-get install " + debianPackage + ")");
  }

  /** One helper binary on PATH, whatever package brings it. */
  public static Optional<String> whyNoTool(String tool) {
    return hasTool(tool) ? Optional.empty() : Optional.of("needs " + tool + " on PATH");
  }

  public static void assumeTool(String tool, String debianPackage) {
    assume(whyNoTools(debianPackage, tool));
  }

  /**
   * CAP_SYS_RESOURCE, which the kernel wants for online ext4 resizing (EXT4_IOC_RESIZE_FS) and
   * which some container sandboxes drop even for root.
   */
  public static Optional<String> whyNoCapSysResource() {
    if (HostCapabilities.current().canGrowMountedExt4()) {
      return Optional.empty();
    }
    return Optional.of("needs CAP_SYS_RESOURCE (online ext4 resize); this process's effective set lacks it");
  }

  public static boolean hasCapSysResource() {
    return whyNoCapSysResource().isEmpty();
  }

  public static void assumeCapSysResource() {
    assume(whyNoCapSysResource());
  }

  /** What growing a mounted filesystem of {@code fsType} needs beyond its tools: CAP_SYS_RESOURCE for ext4. */
  public static void assumeOnlineGrow(String fsType) {
    if (fsType.equals("ext4")) {
      assumeCapSysResource();
    }
  }

  // ---- the guest ---------------------------------------------------------------------------------

  /** The Debian guest kernel of {@code scripts/guest-test}, which sets {@code CARAVAN_GUEST=1}. */
  public static Optional<String> whyNotGuest() {
    return "1".equals(System.getenv("CARAVAN_GUEST"))
        ? Optional.empty()
        : Optional.of("needs the guest kernel (CARAVAN_GUEST=1): run it with " + GUEST_SUITE);
  }

  public static boolean isGuest() {
    return whyNotGuest().isEmpty();
  }

  public static void assumeGuest() {
    assume(whyNotGuest());
  }

  /**
   * Device-mapper (dm-linear, dm-error) and dmsetup, in the guest. The guest loads modules on
   * demand, so a test run alone loads dm_mod itself instead of relying on an earlier test's dmsetup;
   * in the guest, a failing modprobe fails the test rather than skipping it.
   */
  public static void assumeDeviceMapper() {
    Path control = Path.of("/dev/mapper/control");
    if (isGuest() && !Files.exists(control)) {
      GuestIscsi.run(List.of("modprobe", "dm_mod"));
    }
    assume(whyNotGuest().or(() -> Files.exists(control)
        ? Optional.empty()
        : Optional.of("needs device-mapper (" + control + "): the guest of " + GUEST_SUITE + " has it")));
  }

  /**
   * Device-mapper's crypt target, as {@link HostCapabilities#dmCryptProblem()} sees it, with loop
   * devices to put LUKS2 on. In the guest, dm_mod and dm_crypt are loaded first (a failing modprobe
   * fails the test there); elsewhere nothing is loaded.
   */
  public static Optional<String> whyNoDmCrypt() {
    if (isGuest() && rootWithLoopDevices()) {
      GuestIscsi.run(List.of("modprobe", "-a", "dm_mod", "dm_crypt"));
    }
    return whyNoLoopDevices().or(() -> HostCapabilities.current().dmCryptProblem()
        .map(why -> "needs dm-crypt (" + why + "): the guest of " + GUEST_SUITE + " has it"));
  }

  public static void assumeDmCrypt() {
    assume(whyNoDmCrypt());
  }

  /** The opposite, for the tests of the refusal: a kernel without dm-crypt. */
  public static void assumeNoDmCrypt() {
    assume(HostCapabilities.current().hasDmCrypt()
        ? Optional.of("checks the refusal without dm-crypt, and this kernel has it")
        : Optional.empty());
  }

  // ---- ZFS ---------------------------------------------------------------------------------------

  /**
   * Real ZFS: the zfs kernel module ({@code /dev/zfs}), as root, with the test pool that {@code
   * scripts/guest-test} creates and names in {@code CARAVAN_TEST_POOL}. A pool of the machine's own
   * is never touched: without that variable the tests skip.
   */
  public static Optional<String> whyNoZfs() {
    HostCapabilities host = HostCapabilities.current();
    if (!host.hasZfsModule() || !host.isRoot()) {
      return Optional.of("needs real ZFS (/dev/zfs, as root): it runs in the guest kernel of " + GUEST_SUITE);
    }
    if (System.getenv("CARAVAN_TEST_POOL") == null) {
      return Optional.of("needs the test pool that scripts/guest-test creates (CARAVAN_TEST_POOL is unset)");
    }
    return Optional.empty();
  }

  public static boolean hasZfs() {
    return whyNoZfs().isEmpty();
  }

  public static void assumeZfs() {
    assume(whyNoZfs());
  }

  /**
   * The opposite, for the tests of how things refuse without ZFS: no {@code /dev/zfs} (the module is
   * not loaded); where it is, {@code coveredBy} names what runs instead.
   */
  public static void assumeNoZfsModule(String coveredBy) {
    assumeTrue(!HostCapabilities.current().hasZfsModule(), () -> "this host has ZFS (/dev/zfs); " + coveredBy);
  }

  // ---- iSCSI -------------------------------------------------------------------------------------

  /**
   * The guest's iSCSI world: a kernel with LIO, iscsi_tcp and dm-multipath (the guest), and
   * open-iscsi's and multipath-tools' daemons and tools installed. {@link GuestIscsi#assumeAvailable}
   * asks this, then starts that world.
   */
  public static Optional<String> whyNoIscsi() {
    if (!isGuest()) {
      return Optional.of("needs a kernel with LIO, iscsi_tcp and dm-multipath: run in the guest of " + GUEST_SUITE);
    }
    for (String tool : List.of("iscsid", "iscsiadm", "multipathd")) {
      if (!hasSystemTool(tool)) {
        return Optional.of("needs " + tool + " (apt-get install open-iscsi multipath-tools; scripts/guest/setup does)");
      }
    }
    return Optional.empty();
  }

  /** A daemon or administrator's tool: on PATH, or in the sbin directories root's PATH has. */
  private static boolean hasSystemTool(String tool) {
    return hasTool(tool) || Stream.of("/usr/sbin", "/sbin").map(d -> Path.of(d, tool)).anyMatch(Files::isExecutable);
  }

  // ------------------------------------------------------------------------------------------------

  /** Skips the calling test when {@code why} names something missing, with that as the reason. */
  public static void assume(Optional<String> why) {
    assumeTrue(why.isEmpty(), why::orElseThrow);
  }
}
