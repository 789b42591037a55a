package dev.caravan.storage.fs;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.DataPresentException;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.block.Signature;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Ioctl;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.internal.sys.Statvfs;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/** Formatting, growing, freezing and measuring ext4 and xfs filesystems. */
public final class Filesystems {
  private static final Duration TOOL_TIMEOUT = Duration.ofMinutes(10);

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
    Signature found = Probe.probe(device);
    if (found.kind() == Signature.Kind.FILESYSTEM && found.type().equals(Optional.of(type.id()))) {
      return FormatOutcome.ALREADY_FORMATTED;
    }
    if (!found.isEmpty()) {
      throw new DataPresentException(device, found.describe());
    }
    List<String> command = new ArrayList<>();
    switch (type) {
      case EXT4 -> command.addAll(List.of("mkfs.ext4", "-E", "nodiscard"));
      case XFS -> command.addAll(List.of("mkfs.xfs", "-K"));
    }
    command.addAll(mkfsOptions);
    command.add(device.toString());
    ToolRunner.run(command, TOOL_TIMEOUT);
    return FormatOutcome.FORMATTED;
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
