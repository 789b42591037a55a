package dev.caravan.storage.fs;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.DataPresentException;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.ToolException;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Ioctl;
import dev.caravan.storage.internal.sys.Libc;
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
   * Formats {@code device} only if it holds nothing. A filesystem of the requested type is left
   * untouched ({@link FormatOutcome#ALREADY_FORMATTED}); any other signature (another filesystem, a
   * partition table, a RAID/LVM member, a crypto header) is refused with a {@link
   * DataPresentException}.
   *
   * <p>The mkfs tools run without their force flags, so each repeats the check itself and refuses a
   * device that gained a signature after our probe. Discard is skipped ({@code -E nodiscard},
   * {@code -K}): on a large thin device it can take minutes, and a fresh device is already empty.
   * {@code mkfsOptions} come after ours and so can override them.
   */
  public static FormatOutcome formatIfEmpty(Path device, FsType type, List<String> mkfsOptions) {
    return Formatting.formatIfEmpty(device, type, mkfsOptions, () -> {});
  }

  /**
   * Grows the ext4 or xfs filesystem mounted at {@code mountPoint}, online, to the size of its
   * device (grow the device first, e.g. {@code LoopDevices.refreshCapacity}).
   */
  public static void grow(Path mountPoint) {
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
    return Superblocks.size(device, type);
  }

  /** Space and inodes of the filesystem holding {@code path} ({@code statvfs}). */
  public static FsStats stats(Path path) {
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
    try (Frozen frozen = freeze(mountPoint)) {
      return action.get();
    }
  }

  private static MountEntry mountAt(Path mountPoint) {
    return MountTable.at(mountPoint)
        .orElseThrow(() -> new StorageException(mountPoint + " is not a mount point"));
  }
}
