package dev.caravan.storage.fs;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.DataPresentException;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.SyscallException;
import dev.caravan.storage.ToolException;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.internal.fs.Superblocks;
import dev.caravan.storage.internal.sys.Errno;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Ioctl;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.internal.sys.NativeAccess;
import dev.caravan.storage.internal.sys.Statvfs;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.function.Supplier;

/** Formatting, growing, freezing and measuring ext4 and xfs filesystems. */
public final class Filesystems {
  private static final Duration TOOL_TIMEOUT = Duration.ofMinutes(10);
  // e2fsck's exit status 1: errors were found and corrected, the filesystem is now consistent.
  private static final int E2FSCK_CORRECTED = 1;

  private Filesystems() {}

  /**
   * Formats block device {@code device} as {@code type} only if it holds nothing, and reports
   * {@link FormatOutcome#FORMATTED} only once that filesystem is on it.
   *
   * <ul>
   *   <li>A filesystem of the requested type is left untouched ({@link
   *       FormatOutcome#ALREADY_FORMATTED}), mounted or not.
   *   <li>Any other signature libblkid recognises (such as another filesystem, a partition table,
   *       an LVM physical volume, a LUKS header) is refused with a {@link DataPresentException}
   *       naming it.
   *   <li>A device whose first or last MiB, where libblkid looks, cannot be read (I/O errors) is
   *       refused with an {@link dev.caravan.storage.UnreadableDeviceException} naming that part
   *       and the error: what it holds is unknown, and unknown is never empty.
   *   <li>The device is probed through a descriptor opened with {@code O_EXCL}. A device that is
   *       mounted, or held open with {@code O_EXCL} by another program, and holds no filesystem of
   *       the requested type is refused without running mkfs.
   *   <li>Calls for one device from threads of this JVM run one at a time, whatever path names the
   *       device (the lock belongs to its device number): of several concurrent callers one gets
   *       {@code FORMATTED}, the others {@code ALREADY_FORMATTED}.
   *   <li>The mkfs tool checks for signatures itself before it writes, and refuses: a signature
   *       written after our probe is refused too. mkfs.xfs always checks. mke2fs checks only when
   *       its standard input and output are terminals, so it runs at a pseudo-terminal where the
   *       answer to its "Proceed anyway? (y,N)" is already typed: no. The device is probed again
   *       and the refusal is a {@code DataPresentException} naming what is there, with the tool's
   *       failure as its cause.
   *   <li>After mkfs succeeds the device is probed again: anything but a filesystem of the
   *       requested type (nothing, after a dry run such as {@code -n}; another type, such as {@code
   *       -t ext2}) is a {@link StorageException}, not {@code FORMATTED}.
   *   <li>{@code mkfsOptions} come after ours on the command line. An option that makes the tool
   *       skip its own check ({@code -F} for mke2fs, {@code -f} or {@code -C} for mkfs.xfs) is an
   *       {@link IllegalArgumentException}. Ours skip discard ({@code -E nodiscard}, {@code -K}):
   *       on a large thin device it can take minutes, and a fresh device is already empty.
   * </ul>
   *
   * <p>Not guaranteed: a program that writes to the device without claiming it exclusively, after
   * the tool's own check and before the tool's writes, is not kept out (no tool can keep it out).
   * Callers in other processes are not serialised with ours; between them, only {@code O_EXCL} and
   * the tools' own checks apply. A process that other code in this JVM starts (not through {@link
   * dev.caravan.storage.exec.ToolRunner}) while the device is probed holds a copy of the probe's
   * descriptor until it runs its program; mkfs then finds the device busy and fails.
   *
   * @throws StorageException when {@code device} is not a block device
   */
  public static FormatOutcome formatIfEmpty(Path device, FsType type, List<String> mkfsOptions) {
    NativeAccess.require();
    return Formatting.formatIfEmpty(device, type, mkfsOptions, () -> {});
  }

  /**
   * Grows the ext4 or xfs filesystem mounted at {@code mountPoint}, online, to the size of its
   * device (grow the device first, e.g. {@code LoopDevices.refreshCapacity}).
   */
  public static void grow(Path mountPoint) {
    NativeAccess.require();
    MountEntry mount = mountAt(mountPoint);
    FsType type =
        FsType.parse(mount.fsType())
            .orElseThrow(
                () -> new StorageException("cannot grow " + mount.fsType() + " at " + mountPoint));
    List<String> command =
        switch (type) {
          case EXT4 ->
              List.of("resize2fs", BlockDevices.byMajorMinor(mount.majorMinor()).toString());
          case XFS -> List.of("xfs_growfs", mount.mountPoint().toString());
        };
    ToolRunner.run(command, TOOL_TIMEOUT);
  }

  /**
   * Grows the ext4 filesystem on an unmounted {@code device} to the device's size, after the
   * preening {@code e2fsck -f -p} that resize2fs demands of an unmounted filesystem (preen mode
   * repairs only what is safe unattended and fails on anything else). Unlike an online grow this
   * needs no CAP_SYS_RESOURCE. xfs grows only while mounted ({@link #grow(Path)}); a device that is
   * mounted anywhere is refused, since checking a live filesystem would corrupt it.
   */
  public static void growUnmounted(Path device, FsType type) {
    NativeAccess.require();
    if (type != FsType.EXT4) {
      throw new StorageException(type.id() + " grows only while mounted: " + device);
    }
    String majorMinor = BlockDevices.majorMinor(device);
    for (MountEntry mount : MountTable.read()) {
      if (mount.majorMinor().equals(majorMinor)) {
        throw new StorageException(
            device + " is mounted at " + mount.mountPoint() + ": grow it there, online");
      }
    }
    try {
      ToolRunner.run(List.of("e2fsck", "-f", "-p", device.toString()), TOOL_TIMEOUT);
    } catch (ToolException e) {
      if (e.exitCode() != E2FSCK_CORRECTED) {
        throw e;
      }
    }
    ToolRunner.run(List.of("resize2fs", device.toString()), TOOL_TIMEOUT);
  }

  /**
   * How many bytes the ext4 or xfs filesystem on {@code device} spans, from its superblock: compare
   * with {@link BlockDevices#size(Path)} to see whether a grow has anything to do.
   */
  public static long size(Path device, FsType type) {
    NativeAccess.require();
    return switch (type) {
      case EXT4 -> Superblocks.ext4Size(device);
      case XFS -> Superblocks.xfsSize(device);
    };
  }

  /** Space and inodes of the filesystem holding {@code path} ({@code statvfs}). */
  public static FsStats stats(Path path) {
    NativeAccess.require();
    Statvfs s = Libc.statvfs(path);
    long unit = s.fragmentSize();
    return new FsStats(
        s.blocks() * unit,
        (s.blocks() - s.blocksFree()) * unit,
        s.blocksAvailable() * unit,
        s.files(),
        s.files() - s.filesFree(),
        s.filesFree());
  }

  /**
   * Freezes the filesystem mounted at {@code mountPoint} ({@code FIFREEZE}): dirty data is flushed
   * and writes block until the returned handle is closed. Refuses a path that is not a mount point,
   * which would freeze whatever filesystem contains it, possibly the root.
   */
  public static Frozen freeze(Path mountPoint) {
    NativeAccess.require();
    MountEntry mount = mountAt(mountPoint);
    Fd fd = Libc.open(mount.mountPoint(), LinuxUapi.O_RDONLY() | LinuxUapi.O_DIRECTORY());
    try {
      Libc.ioctl(fd, Ioctl.FIFREEZE, 0);
    } catch (RuntimeException e) {
      fd.close();
      throw e;
    }
    return new Frozen(mount.mountPoint(), fd);
  }

  /** Runs {@code action} with the filesystem frozen; it is thawed however the action ends. */
  public static <T> T whileFrozen(Path mountPoint, Supplier<T> action) {
    NativeAccess.require();
    try (Frozen frozen = freeze(mountPoint)) {
      return action.get();
    }
  }

  /**
   * Thaws the filesystem mounted at {@code mountPoint} ({@code FITHAW}) whoever froze it: for a
   * freeze whose {@link Frozen} handle is gone with the process that held it. Returns whether it was
   * frozen. Refuses a path that is not a mount point, as {@link #freeze} does.
   */
  public static boolean thaw(Path mountPoint) {
    NativeAccess.require();
    MountEntry mount = mountAt(mountPoint);
    try (Fd fd = Libc.open(mount.mountPoint(), LinuxUapi.O_RDONLY() | LinuxUapi.O_DIRECTORY())) {
      Libc.ioctl(fd, Ioctl.FITHAW, 0);
      return true;
    } catch (SyscallException e) {
      if (e.errno() == Errno.EINVAL) {
        return false; // not frozen
      }
      throw e;
    }
  }

  private static MountEntry mountAt(Path mountPoint) {
    return MountTable.at(mountPoint)
        .orElseThrow(() -> new StorageException(mountPoint + " is not a mount point"));
  }
}
