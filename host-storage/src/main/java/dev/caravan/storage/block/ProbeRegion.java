package dev.caravan.storage.block;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.UnreadableDeviceException;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Ioctl;
import dev.caravan.storage.internal.sys.Libc;
import java.nio.file.Path;

/**
 * The parts of a device where libblkid looks for signatures, its first and its last MiB, read
 * before libblkid is asked. What libblkid makes of a read that fails is its own affair (which
 * prober reads where, and whether a failure ends the probe or only that prober's search, differs
 * between its versions); an unreadable region is answered here instead, before libblkid can call
 * the device anything: unknown, naming the part and the error. The reads go through the same
 * descriptor (and page cache) as libblkid's.
 */
final class ProbeRegion {
  static final long SPAN = 1L << 20;
  private static final int CHUNK = 64 * 1024;

  private ProbeRegion() {}

  /**
   * @throws UnreadableDeviceException naming the part that fails to read, or reads short
   */
  static void requireReadable(Fd fd, Path device) {
    long size = size(fd);
    long head = Math.min(SPAN, size);
    read(fd, device, 0, head, "its first MiB");
    long tail = Math.max(head, size - SPAN);
    read(fd, device, tail, size - tail, "its last MiB");
  }

  private static long size(Fd fd) {
    return Libc.fstat(fd).isBlockDevice()
        ? Libc.ioctlReadLong(fd, Ioctl.BLKGETSIZE64)
        : Libc.fstat(fd).size();
  }

  private static void read(Fd fd, Path device, long from, long length, String what) {
    for (long at = from; at < from + length; ) {
      long got;
      try {
        got = Libc.preadAndDrop(fd, (int) Math.min(CHUNK, from + length - at), at);
      } catch (StorageException e) {
        throw new UnreadableDeviceException(device, what, e);
      }
      if (got <= 0) {
        throw new UnreadableDeviceException(device, what,
            new StorageException("read " + got + " bytes at offset " + at + " of a " + (from + length) + "-byte span"));
      }
      at += got;
    }
  }
}
