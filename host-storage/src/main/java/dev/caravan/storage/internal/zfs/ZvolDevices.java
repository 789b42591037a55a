package dev.caravan.storage.internal.zfs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Ioctl;
import dev.caravan.storage.internal.sys.KernelBuffers;
import dev.caravan.storage.internal.sys.Libc;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * Finds the {@code /dev/zdN} block device of a zvol without udev.
 *
 * <p>The kernel numbers zvol devices in creation order ({@code zd0}, {@code zd16}, ...: 16 minors
 * each, for partitions), and sysfs does not record which dataset a {@code zdN} belongs to. The
 * device itself does: the {@code BLKZNAME} ioctl on a zvol returns its dataset name. That is what
 * the udev helper {@code zvol_id} uses to create the {@code /dev/zvol/<dataset>} links, and what
 * this class does: list the whole-disk {@code zd*} entries in {@code /sys/block}, open each one's
 * node read-only (devtmpfs creates {@code /dev/zdN} even without udev) and ask its name. A
 * read-only open does not hold the zvol exclusively, and it is closed at once.
 */
public final class ZvolDevices {
  /** {@code _IOR(0x12, 125, char[ZFS_MAX_DATASET_NAME_LEN])}, from {@code sys/fs/zfs.h}. */
  static final Ioctl BLKZNAME =
      new Ioctl(
          "BLKZNAME",
          (2L << 30) | ((long) ZfsCommand.MAX_DATASET_NAME << 16) | (0x12L << 8) | 125);

  private static final int O_RDONLY = 0;
  private static final Path SYS_BLOCK = Path.of("/sys/block");
  private static final Path DEV = Path.of("/dev");
  private static final Path UDEV_CONTROL = Path.of("/run/udev/control");

  private ZvolDevices() {}

  /** The {@code /dev/zvol/<dataset>} link udev creates (it may not exist). */
  public static Path udevLink(String dataset) {
    return Path.of("/dev/zvol").resolve(dataset);
  }

  /** Whether a udev daemon is running here (its control socket exists). */
  public static boolean udevRunning() {
    return Files.exists(UDEV_CONTROL);
  }

  /** The {@code /dev/zdN} whose zvol is {@code dataset}, if its minor exists yet. */
  public static Optional<Path> findByName(String dataset) {
    try (DirectoryStream<Path> disks = Files.newDirectoryStream(SYS_BLOCK, "zd*")) {
      for (Path disk : disks) {
        Path node = DEV.resolve(disk.getFileName().toString());
        if (dataset.equals(nameOf(node).orElse(null))) {
          return Optional.of(node);
        }
      }
      return Optional.empty();
    } catch (IOException e) {
      throw new StorageException("cannot list " + SYS_BLOCK + ": " + e.getMessage(), e);
    }
  }

  /** The dataset name of the zvol at {@code node}; empty if it vanished or is not a zvol. */
  public static Optional<String> nameOf(Path node) {
    try (Fd fd = Libc.open(node, O_RDONLY);
        KernelBuffers buffers = new KernelBuffers()) {
      // zvol_ioctl copies out MAXNAMELEN (256) bytes, whatever the name's length.
      MemorySegment name = buffers.allocate("zvol name", ZfsCommand.MAX_DATASET_NAME, 8);
      buffers.ioctl(fd, BLKZNAME, name);
      name.set(JAVA_BYTE, ZfsCommand.MAX_DATASET_NAME - 1, (byte) 0);
      return Optional.of(name.getString(0, StandardCharsets.UTF_8));
    } catch (dev.caravan.storage.SyscallException e) {
      // ENOENT/ENXIO: the minor is being removed or not set up yet; ENOTTY: not a zvol.
      return Optional.empty();
    }
  }
}
