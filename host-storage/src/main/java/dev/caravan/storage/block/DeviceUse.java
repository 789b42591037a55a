package dev.caravan.storage.block;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.SyscallException;
import dev.caravan.storage.internal.sys.Claims;
import dev.caravan.storage.internal.sys.Errno;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.internal.sys.NativeAccess;
import dev.caravan.storage.internal.sys.Stat;
import dev.caravan.storage.internal.sys.Sysfs;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/**
 * Whether a block device is in use, and by what, asked of the kernel: the one definition every
 * destructive step (a volume's deletion, a loop detach, a multipath flush, a zvol destroy) asks
 * before it acts. A device, or any of its partitions, is in use when it is
 *
 * <ul>
 *   <li><b>mounted</b>: a mount whose device ({@code major:minor} in mountinfo) is this one;
 *   <li><b>bound</b>: its device node is bind-mounted somewhere, which is how a volume is published
 *       for block access. Such a mount carries the {@code major:minor} of the filesystem the node
 *       lives on (devtmpfs), not the device's, and its root is the node's path in that filesystem
 *       ({@code /loop3}, {@code /zd16}, {@code /dm-2}). It is matched by that path on devtmpfs, and
 *       on any other filesystem (a tmpfs {@code /dev} of a container) by the same name confirmed
 *       with the device number of the node at the mount point;
 *   <li><b>held</b>: something is stacked on it (sysfs {@code holders}: a device-mapper map, md,
 *       a partition mapping);
 *   <li><b>opened exclusively</b> by a process ({@code O_EXCL}, as mkfs and a VM's disk do): asked
 *       with an exclusive open of our own, which the kernel refuses with EBUSY. Asked only when
 *       nothing above is found, since a mount and a holder also refuse it;
 *   <li><b>mounted in another mount namespace</b>: what such a refusal is when a process's copy of
 *       the mounts (it unshared them with private propagation while the device was mounted here)
 *       still holds the filesystem. Named with that process, found through /proc.
 * </ul>
 *
 * <p>A bind mount holds neither an open descriptor nor a claim on the device, so nothing but the
 * mount table shows it: a loop device bound at a target can be detached and a zvol bound at a target
 * destroyed without the kernel objecting. Binds are seen in this process's mount namespace only.
 * A plain (non-exclusive) open is not use: udev and monitoring tools open devices for a moment all
 * the time.
 *
 * @param device the device node asked about
 * @param users what uses it, in words: {@code mounted at /p}, {@code bound at /p}, {@code held by
 *     dm-2}, {@code opened exclusively}, {@code mounted at /p in the mount namespace of pid 812
 *     (sleep)}, a partition's prefixed with its name ({@code loop3p1 mounted at /p}); empty when
 *     nothing does
 */
public record DeviceUse(Path device, List<String> users) {
  private static final Path SYS_CLASS_BLOCK = Path.of("/sys/class/block");
  private static final String DEVTMPFS = "devtmpfs";
  static final String OPENED_EXCLUSIVELY = "opened exclusively (by a process: mkfs, a VM, another tool)";

  public DeviceUse {
    users = List.copyOf(users);
  }

  public boolean inUse() {
    return !users.isEmpty();
  }

  /** E.g. {@code /dev/loop3 is bound at /t, held by dm-2}, for messages. */
  public String describe() {
    return device + (users.isEmpty() ? " is not in use" : " is " + String.join(", ", users));
  }

  /**
   * What uses the block device {@code devNode} (any path to its node: {@code /dev/loop3}, {@code
   * /dev/zvol/pool/vol}, {@code /dev/mapper/name}). A node that does not exist is used by nothing.
   *
   * @throws StorageException when {@code devNode} exists and is not a block device
   */
  public static DeviceUse of(Path devNode) {
    NativeAccess.require();
    Stat stat;
    try {
      stat = Libc.stat(devNode);
    } catch (SyscallException e) {
      if (e.errno() == Errno.ENOENT) {
        return new DeviceUse(devNode, List.of());
      }
      throw e;
    }
    if (!stat.isBlockDevice()) {
      throw new StorageException(devNode + " is not a block device");
    }
    String majorMinor = stat.rdevMajorMinor();
    Optional<String> name = kernelName(majorMinor);
    if (name.isEmpty()) {
      return new DeviceUse(devNode, List.of()); // the device went away as we looked
    }
    List<String> users = new ArrayList<>();
    List<MountEntry> table = MountTable.read();
    Path dir = SYS_CLASS_BLOCK.resolve(name.get());
    users.addAll(mountsAndBinds(name.get(), majorMinor, table, DeviceUse::nodeAt));
    users.addAll(holders(dir, ""));
    for (Path entry : Sysfs.entries(dir)) {
      String part = entry.getFileName().toString();
      if (!part.startsWith(name.get()) || !Files.exists(entry.resolve("partition"))) {
        continue;
      }
      Optional<String> partDev = Sysfs.attribute(entry.resolve("dev"));
      if (partDev.isPresent()) {
        for (String use : mountsAndBinds(part, partDev.get(), table, DeviceUse::nodeAt)) {
          users.add(part + " " + use);
        }
        users.addAll(holders(entry, part + " "));
      }
    }
    if (users.isEmpty() && openedExclusively(devNode)) {
      List<String> elsewhere = OtherNamespaceMounts.of(majorMinor);
      users.addAll(elsewhere.isEmpty() ? List.of(OPENED_EXCLUSIVELY) : elsewhere);
    }
    return new DeviceUse(devNode, users);
  }

  /**
   * The mount-table part of {@link #of}, for a caller that has read the table and knows the device:
   * the mounts of device {@code majorMinor} ({@code mounted at P}) and the bind mounts of its node
   * ({@code bound at P}), whose kernel name ({@code sysfs DEVNAME}) is {@code name}.
   *
   * @param nodeAt the {@code major:minor} of the block device node at a path, empty when there is
   *     none: confirms a bind whose root names the device on a filesystem other than devtmpfs
   */
  public static List<String> mountsAndBinds(
      String name, String majorMinor, List<MountEntry> table, Function<Path, Optional<String>> nodeAt) {
    NativeAccess.require();
    List<String> users = new ArrayList<>();
    String nodePath = "/" + name;
    for (MountEntry m : table) {
      if (m.majorMinor().equals(majorMinor)) {
        users.add("mounted at " + m.mountPoint());
      } else if (m.fsType().equals(DEVTMPFS) ? m.root().equals(nodePath) : namesNode(m.root(), name)
          && nodeAt.apply(m.mountPoint()).filter(majorMinor::equals).isPresent()) {
        users.add("bound at " + m.mountPoint());
      }
    }
    return users;
  }

  /** The device node at {@code path} as {@code major:minor}; empty when there is none. */
  public static Optional<String> nodeAt(Path path) {
    NativeAccess.require();
    try {
      Stat s = Libc.stat(path);
      return s.isBlockDevice() ? Optional.of(s.rdevMajorMinor()) : Optional.empty();
    } catch (SyscallException e) {
      return Optional.empty();
    }
  }

  private static boolean namesNode(String root, String name) {
    return root.equals("/" + name) || root.endsWith("/" + name);
  }

  private static List<String> holders(Path dir, String prefix) {
    List<String> users = new ArrayList<>();
    for (Path holder : Sysfs.entries(dir.resolve("holders"))) {
      users.add(prefix + "held by " + holder.getFileName());
    }
    return users;
  }

  /** The kernel's name for the device ({@code loop3}, {@code zd16}, {@code dm-2}); empty once it is gone. */
  private static Optional<String> kernelName(String majorMinor) {
    Optional<String> uevent = Sysfs.attribute(Path.of("/sys/dev/block", majorMinor, "uevent"));
    return uevent.flatMap(text -> text.lines()
        .filter(line -> line.startsWith("DEVNAME="))
        .map(line -> line.substring("DEVNAME=".length()))
        .findFirst());
  }

  /**
   * Whether another opener holds the device exclusively: our own exclusive open fails with EBUSY.
   * Opened for reading only and closed at once, so nothing is written and udev is not woken.
   */
  private static boolean openedExclusively(Path devNode) {
    // A zvol refuses an exclusive open while anyone has it open at all (OpenZFS's zvol_open), and
    // udev's probe after a create or a snapshot opens it for a moment: use that lasts is use, so
    // the answer is EBUSY on every try across about 1.5 s.
    for (long pause : EXCLUSIVE_RETRY_MILLIS) {
      if (!openedExclusivelyNow(devNode)) {
        return false;
      }
      try {
        Thread.sleep(pause);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return true;
      }
    }
    return openedExclusivelyNow(devNode);
  }

  private static final long[] EXCLUSIVE_RETRY_MILLIS = {50, 100, 200, 400, 800};

  private static boolean openedExclusivelyNow(Path devNode) {
    return Claims.whileClaiming(() -> {
      try {
        Fd fd = Libc.open(devNode, LinuxUapi.O_RDONLY() | LinuxUapi.O_EXCL());
        fd.close();
        return false;
      } catch (SyscallException e) {
        return switch (e.errno()) {
          case Errno.EBUSY -> true;
          case Errno.ENOENT, Errno.ENXIO -> false; // gone: nothing holds it
          default -> throw e;
        };
      }
    });
  }
}
