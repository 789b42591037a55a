package dev.caravan.storage.block;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Ioctl;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.internal.sys.NativeAccess;
import dev.caravan.storage.internal.sys.Stat;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Facts about block devices. */
public final class BlockDevices {
  private BlockDevices() {}

  /** The device's size in bytes ({@code BLKGETSIZE64}). */
  public static long size(Path device) {
    NativeAccess.require();
    try (Fd fd = Libc.open(device, LinuxUapi.O_RDONLY())) {
      return Libc.ioctlReadLong(fd, Ioctl.BLKGETSIZE64);
    }
  }

  /**
   * The {@code "major:minor"} of a block device node, as the mount table writes it.
   *
   * @throws StorageException when {@code device} is not a block device
   */
  public static String majorMinor(Path device) {
    NativeAccess.require();
    Stat stat = Libc.stat(device);
    if (!stat.isBlockDevice()) {
      throw new StorageException(device + " is not a block device");
    }
    return stat.rdevMajorMinor();
  }

  /**
   * The device node for a {@code "major:minor"} pair, as the mount table gives it: {@code
   * /dev/loop3} for {@code "7:3"}. The kernel's own name (sysfs {@code DEVNAME}), so it does not
   * depend on udev symlinks.
   */
  public static Path byMajorMinor(String majorMinor) {
    NativeAccess.require();
    Path uevent = Path.of("/sys/dev/block", majorMinor, "uevent");
    try {
      return Files.readAllLines(uevent, StandardCharsets.UTF_8).stream()
          .filter(line -> line.startsWith("DEVNAME="))
          .map(line -> Path.of("/dev", line.substring("DEVNAME=".length())))
          .findFirst()
          .orElseThrow(() -> new StorageException(uevent + " has no DEVNAME"));
    } catch (IOException e) {
      throw new StorageException("no block device " + majorMinor, e);
    }
  }
}
