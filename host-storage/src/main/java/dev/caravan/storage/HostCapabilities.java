package dev.caravan.storage;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * What this process may do on this host, as the kernel sees it: its effective uid and capability
 * set ({@code /proc/self/status}), the loop and ZFS control devices, and the helper tools {@link
 * dev.caravan.storage.exec.ToolRunner} would find. Being root is not enough on its own: container
 * sandboxes often drop capabilities (CAP_SYS_RESOURCE, which an online ext4 resize needs) even for
 * uid 0, so an embedder that wants to choose a path up front (grow online or at the next mount)
 * asks here rather than failing half-way.
 *
 * <p>A snapshot: it reads the process status once, when {@link #current()} is called.
 */
public final class HostCapabilities {
  private static final int CAP_SYS_ADMIN = 21;
  private static final int CAP_SYS_RESOURCE = 24;
  private static final Path LOOP_CONTROL = Path.of("/dev/loop-control");
  private static final Path ZFS_CONTROL = Path.of("/dev/zfs");
  private static final Path PROC_MISC = Path.of("/proc/misc");
  private static final Path DM_CRYPT_MODULE = Path.of("/sys/module/dm_crypt");

  private final long effectiveUid;
  private final long effectiveCapabilities;

  private HostCapabilities(long effectiveUid, long effectiveCapabilities) {
    this.effectiveUid = effectiveUid;
    this.effectiveCapabilities = effectiveCapabilities;
  }

  /** This process, now. */
  public static HostCapabilities current() {
    try {
      return parse(Files.readString(Path.of("/proc/self/status")));
    } catch (IOException e) {
      throw new StorageException("cannot read /proc/self/status: " + e.getMessage(), e);
    }
  }

  /** From the text of a {@code /proc/<pid>/status} file. */
  static HostCapabilities parse(String status) {
    long uid = -1;
    long caps = 0;
    for (String line : status.split("\n", -1)) {
      if (line.startsWith("Uid:")) {
        // real, effective, saved, filesystem
        uid = Long.parseLong(line.substring(4).strip().split("\\s+", -1)[1]);
      } else if (line.startsWith("CapEff:")) {
        caps = Long.parseUnsignedLong(line.substring(7).strip(), 16);
      }
    }
    if (uid < 0) {
      throw new StorageException("no Uid line in the process status");
    }
    return new HostCapabilities(uid, caps);
  }

  /** Effective uid 0. */
  public boolean isRoot() {
    return effectiveUid == 0;
  }

  /** CAP_SYS_ADMIN in the effective set: mount(2), umount(2) and the loop ioctls need it. */
  public boolean canMount() {
    return has(CAP_SYS_ADMIN);
  }

  /**
   * CAP_SYS_RESOURCE in the effective set: the kernel wants it to grow a mounted ext4
   * (EXT4_IOC_RESIZE_FS). Without it, ext4 can still be grown while unmounted; xfs needs only
   * {@link #canMount()}.
   */
  public boolean canGrowMountedExt4() {
    return has(CAP_SYS_RESOURCE);
  }

  /** The loop driver's control device, writable by this process: loop devices can be attached. */
  public boolean hasLoopDevices() {
    return Files.isWritable(LOOP_CONTROL);
  }

  /** The ZFS kernel module's control device ({@code /dev/zfs}): OpenZFS is loaded in this kernel. */
  public boolean hasZfsModule() {
    return Files.exists(ZFS_CONTROL);
  }

  /** Device-mapper with its crypt target: LUKS2 mappings can be opened. */
  public boolean hasDmCrypt() {
    return dmCryptProblem().isEmpty();
  }

  /**
   * Why device-mapper's crypt target cannot be used here, or empty when it can. Device-mapper
   * ({@code dm_mod}) must be registered ({@code device-mapper} in {@code /proc/misc}) or loadable,
   * and the crypt target ({@code dm_crypt}) loaded ({@code /sys/module/dm_crypt}) or loadable; a
   * module is loadable when the running kernel's {@code modules.dep} or {@code modules.builtin}
   * lists it (the kernel loads both on first use). The process must be root.
   */
  public Optional<String> dmCryptProblem() {
    if (!isRoot()) {
      return Optional.of("device-mapper needs root (effective uid 0)");
    }
    boolean registered = readOrEmpty(PROC_MISC).lines().anyMatch(line -> line.endsWith(" device-mapper"));
    if (!registered && !moduleAvailable("dm-mod")) {
      return Optional.of(
          "this kernel has no device-mapper: /proc/misc lists no device-mapper and dm_mod is"
              + " neither built in nor installed for it");
    }
    if (!Files.isDirectory(DM_CRYPT_MODULE) && !moduleAvailable("dm-crypt")) {
      return Optional.of(
          "this kernel has no dm-crypt: the dm_crypt module is neither loaded, built in nor"
              + " installed for it");
    }
    return Optional.empty();
  }

  private static boolean moduleAvailable(String module) {
    String release = readOrEmpty(Path.of("/proc/sys/kernel/osrelease")).strip();
    if (release.isEmpty()) {
      return false;
    }
    String file = "/" + module + ".ko";
    Path dir = Path.of("/lib/modules", release);
    return Stream.of("modules.builtin", "modules.dep")
        .map(name -> readOrEmpty(dir.resolve(name)))
        .anyMatch(text -> text.lines().anyMatch(line -> line.split(":", 2)[0].contains(file)));
  }

  private static String readOrEmpty(Path file) {
    try {
      return Files.readString(file);
    } catch (IOException | RuntimeException e) {
      return "";
    }
  }

  /**
   * The helper binary {@code name} as {@link dev.caravan.storage.exec.ToolRunner} would start it:
   * the first executable of that name in a {@code PATH} directory.
   */
  public Optional<Path> tool(String name) {
    if (name.isEmpty() || name.contains("/")) {
      throw new IllegalArgumentException("a tool name, not a path: '" + name + "'");
    }
    return Stream.of(System.getenv().getOrDefault("PATH", "").split(":", -1))
        .filter(dir -> !dir.isEmpty())
        .map(dir -> Path.of(dir, name))
        .filter(Files::isExecutable)
        .findFirst();
  }

  private boolean has(int capability) {
    return (effectiveCapabilities & (1L << capability)) != 0;
  }

  @Override
  public String toString() {
    return "HostCapabilities[euid=" + effectiveUid + ", CapEff=" + Long.toHexString(effectiveCapabilities) + "]";
  }
}
