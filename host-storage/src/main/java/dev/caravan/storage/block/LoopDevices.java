package dev.caravan.storage.block;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.SyscallException;
import dev.caravan.storage.internal.Pauses;
import dev.caravan.storage.internal.sys.Errno;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Ioctl;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.internal.sys.LoopIoctls;
import dev.caravan.storage.internal.sys.NativeAccess;
import dev.caravan.storage.internal.sys.Stat;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;

/**
 * Loop devices, driven through {@code /dev/loop-control} and the loop ioctls. The kernel is the
 * only registry: which device backs which file is read back from sysfs and {@code
 * LOOP_GET_STATUS64}, so devices attached by other processes (or by {@code losetup}) are seen too.
 */
public final class LoopDevices {
  private static final Path LOOP_CONTROL = Path.of("/dev/loop-control");
  private static final Path SYS_BLOCK = Path.of("/sys/block");
  private static final String DELETED = " (deleted)";
  private static final String BACKING_FILE = "loop/backing_file";
  private static final int ATTEMPTS = 50;
  private static final Duration RETRY = Duration.ofMillis(20);

  // Makes find-then-attach atomic within this JVM, so two threads attaching one file share a
  // device.
  private static final Object ATTACH_LOCK = new Object();

  private LoopDevices() {}

  /**
   * Attaches {@code file} to a free loop device, or returns the device it is already attached to.
   *
   * @throws StorageException if the file is already attached with the other read-only setting
   */
  public static LoopDevice attach(Path file, boolean readOnly) {
    NativeAccess.require();
    Path backing = realPath(file);
    synchronized (ATTACH_LOCK) {
      Optional<LoopDevice> existing = find(backing);
      if (existing.isPresent()) {
        if (existing.get().readOnly() != readOnly) {
          throw new StorageException(
              backing
                  + " is already attached "
                  + (readOnly ? "read-write" : "read-only")
                  + " as "
                  + existing.get().device());
        }
        return existing.get();
      }
      try (Fd backingFd = Libc.open(backing, readOnly ? LinuxUapi.O_RDONLY() : LinuxUapi.O_RDWR());
          Fd control = Libc.open(LOOP_CONTROL, LinuxUapi.O_RDWR())) {
        for (int attempt = 1; ; attempt++) {
          int number = LoopIoctls.getFree(control);
          Path device = devicePath(number);
          try (Fd loop = openNode(device)) {
            LoopIoctls.configure(loop, backingFd, readOnly, backing.toString());
            return new LoopDevice(device, number, backing, readOnly);
          } catch (SyscallException e) {
            // EBUSY: another process configured the same free device between our GET_FREE and
            // CONFIGURE. Asking again gives a different one.
            if (e.errno() != Errno.EBUSY || attempt == ATTEMPTS) {
              throw e;
            }
          }
        }
      }
    }
  }

  /** The loop device backing {@code file}, matched by device and inode, not by name. */
  public static Optional<LoopDevice> find(Path file) {
    NativeAccess.require();
    Stat wanted = Libc.stat(file);
    return bound().stream()
        .filter(b -> b.status().backingDev() == wanted.dev())
        .filter(b -> b.status().backingInode() == wanted.inode())
        .map(Bound::device)
        .findFirst();
  }

  /**
   * Whether loop device {@code device} ({@code /dev/loopN}) is bound to {@code file}, matched by
   * device and inode: one {@code LOOP_GET_STATUS64} on that device, where {@link #find} looks at every
   * loop device. False when the device is unbound, gone or not a loop device node, or when {@code
   * file} does not exist. Use it when the device is known (recorded when it was attached).
   */
  public static boolean backs(Path device, Path file) {
    NativeAccess.require();
    if (!isLoopNode(device)) {
      return false;
    }
    Stat wanted;
    try {
      wanted = Libc.stat(file);
    } catch (SyscallException e) {
      if (e.errno() == Errno.ENOENT) {
        return false;
      }
      throw e;
    }
    try (Fd loop = Libc.open(device, LinuxUapi.O_RDONLY())) {
      LoopIoctls.Status status = LoopIoctls.status(loop);
      return status.backingDev() == wanted.dev() && status.backingInode() == wanted.inode();
    } catch (SyscallException e) {
      if (e.errno() == Errno.ENXIO || e.errno() == Errno.ENOENT) {
        return false; // unbound, or the node is gone
      }
      throw e;
    }
  }

  /**
   * Detaches loop device {@code device} ({@code /dev/loopN}) if it is bound to {@code file}, matched by
   * device and inode as {@link #backs} matches them: the detach for a caller that recorded the device
   * when it attached it, with one {@code LOOP_GET_STATUS64} on that device instead of a look at every
   * loop device ({@link #find}). False, and nothing touched, when the device is unbound, gone, or bound
   * to another file; true when this call detached it (or the kernel deferred the detach to its last
   * close, as for {@link #detach(LoopDevice)}).
   */
  public static boolean detachIfBacking(Path device, Path file) {
    NativeAccess.require();
    for (int attempt = 1; ; attempt++) {
      if (!backs(device, file)) {
        return false;
      }
      DeviceInUseException.requireUnused(device, "detaching " + device + " from " + file);
      switch (clear(device, attempt == ATTEMPTS)) {
        case DETACHED -> {
          return true;
        }
        case GONE -> {
          return false; // detached by someone else between the check and the ioctl
        }
        case BUSY -> pause();
      }
    }
  }

  /**
   * Waits, bounded, for a detach the kernel deferred to the last close (udev's probe after an
   * unmount holds the device for a moment) to happen, so that a caller answered "detached" finds it
   * so: a DeleteVolume right after NodeUnstageVolume. A device still bound after the bound stays
   * marked to detach on its last close.
   */
  private static void awaitUnbound(Path device) {
    String name = device.getFileName().toString();
    if (!name.startsWith("loop")) {
      return;
    }
    Path attribute = SYS_BLOCK.resolve(name).resolve(BACKING_FILE);
    for (int attempt = 0; attempt < ATTEMPTS && Files.exists(attribute); attempt++) {
      pause();
    }
  }

  /** Every loop device that is bound to a file, by number. */
  public static List<LoopDevice> list() {
    NativeAccess.require();
    return bound().stream().map(Bound::device).toList();
  }

  /** Makes the device see its backing file's new size ({@code LOOP_SET_CAPACITY}). */
  public static void refreshCapacity(LoopDevice device) {
    NativeAccess.require();
    try (Fd loop = Libc.open(device.device(), LinuxUapi.O_RDONLY())) {
      Libc.ioctl(loop, Ioctl.LOOP_SET_CAPACITY, 0);
    }
  }

  /**
   * As {@link #refreshCapacity(LoopDevice)}, for a device known to back {@code file} (just returned
   * by {@link #attach}), and only when its size differs from the file's in whole 512-byte sectors
   * (how the loop driver sizes a device without an offset or limit): one stat and one {@code
   * BLKGETSIZE64} when it is current, as a device just attached is, instead of a search of every
   * loop device and a capacity change the kernel announces to udev even when nothing changed.
   */
  public static void refreshCapacity(Path device, Path file) {
    NativeAccess.require();
    long fileBytes = Libc.stat(file).size() & ~511L;
    try (Fd loop = Libc.open(device, LinuxUapi.O_RDONLY())) {
      if (Libc.ioctlReadLong(loop, Ioctl.BLKGETSIZE64) != fileBytes) {
        Libc.ioctl(loop, Ioctl.LOOP_SET_CAPACITY, 0);
      }
    }
  }

  /**
   * Detaches the device ({@code LOOP_CLR_FD}). A device that is no longer attached to this device's
   * backing file (already detached, perhaps since reused for another file) is left alone: that is
   * success. A device in use as {@link DeviceUse} defines it (mounted, its node bound at a target,
   * held, opened exclusively) is refused: a bind of its node holds no reference the kernel would wait
   * for, so a detach would pull the device from under a block publish. Another plain open (udev, a
   * monitoring tool) makes the kernel defer the detach to the last close.
   *
   * @throws DeviceInUseException when the device is in use, nothing detached
   */
  public static void detach(LoopDevice device) {
    NativeAccess.require();
    for (int attempt = 1; ; attempt++) {
      Optional<String> backing = backingFile(device.number());
      if (backing.isEmpty()
          || !withoutDeleted(backing.get())
              .equals(withoutDeleted(device.backingFile().toString()))) {
        return;
      }
      DeviceInUseException.requireUnused(
          device.device(), "detaching " + device.device() + " from " + device.backingFile());
      if (clear(device.device(), attempt == ATTEMPTS) != Cleared.BUSY) {
        return; // detached now, or already: gone with its device node
      }
      pause();
    }
  }

  /** What one {@link #clear} did. */
  private enum Cleared {
    /** Detached by this call, and unbound (or its detach deferred to the last close). */
    DETACHED,
    /** Already unbound, or its node is gone with the device. */
    GONE,
    /** The kernel is still releasing it: try again. */
    BUSY
  }

  /**
   * One {@code LOOP_CLR_FD} on a device the caller checked is bound and unused, then the bounded wait
   * for the unbind that both detaches need.
   *
   * @throws SyscallException for EBUSY on the {@code last} attempt, and for any other failure
   */
  private static Cleared clear(Path device, boolean last) {
    try (Fd loop = Libc.open(device, LinuxUapi.O_RDONLY())) {
      Libc.ioctl(loop, Ioctl.LOOP_CLR_FD, 0);
    } catch (SyscallException e) {
      switch (e.errno()) {
        case Errno.ENXIO, Errno.ENOENT -> {
          return Cleared.GONE;
        }
        case Errno.EBUSY -> {
          if (last) {
            throw e;
          }
          return Cleared.BUSY;
        }
        default -> throw e;
      }
    }
    awaitUnbound(device);
    return Cleared.DETACHED;
  }

  private record Bound(LoopDevice device, LoopIoctls.Status status) {}

  // The kernel creates /sys/block/loopN/loop/ only while the device is bound, so unbound devices
  // (usually most of them) are skipped with one access(2) each, without opening anything.
  private static List<Bound> bound() {
    List<Bound> bound = new ArrayList<>();
    try (DirectoryStream<Path> devices = Files.newDirectoryStream(SYS_BLOCK, "loop*")) {
      for (Path sysfs : devices) {
        Path attribute = sysfs.resolve(BACKING_FILE);
        if (!Files.exists(attribute)) {
          continue;
        }
        int number = Integer.parseInt(sysfs.getFileName().toString().substring("loop".length()));
        read(attribute).flatMap(file -> probe(number, file)).ifPresent(bound::add);
      }
    } catch (IOException e) {
      throw new StorageException("cannot list " + SYS_BLOCK, e);
    }
    bound.sort(Comparator.comparingInt(b -> b.device().number()));
    return bound;
  }

  // Every step can race with a detach elsewhere; a device that went away is simply not bound.
  private static Optional<Bound> probe(int number, String backingFile) {
    Path device = devicePath(number);
    try (Fd loop = Libc.open(device, LinuxUapi.O_RDONLY())) {
      LoopIoctls.Status status = LoopIoctls.status(loop);
      return Optional.of(
          new Bound(
              new LoopDevice(device, number, Path.of(backingFile), status.readOnly()), status));
    } catch (SyscallException e) {
      if (e.errno() == Errno.ENXIO || e.errno() == Errno.ENOENT) {
        return Optional.empty();
      }
      throw e;
    }
  }

  /** The backing file sysfs reports for {@code /dev/loopN}; empty when it is not bound. */
  private static Optional<String> backingFile(int number) {
    return read(SYS_BLOCK.resolve("loop" + number).resolve(BACKING_FILE));
  }

  // An empty name is a device whose file is already gone as we look: not bound either.
  private static Optional<String> read(Path attribute) {
    for (int attempt = 1; ; attempt++) {
      try {
        return Optional.of(Files.readString(attribute, StandardCharsets.UTF_8).strip()).filter(b -> !b.isEmpty());
      } catch (NoSuchFileException e) {
        return Optional.empty();
      } catch (IOException e) {
        // ENODEV: the device was detached, by any process, between our open and our read, which
        // removes its loop/ attributes. Gone now: not bound. Back again: bound anew, read it again.
        if (!Files.exists(attribute)) {
          return Optional.empty();
        }
        if (attempt == 3) {
          throw new StorageException("cannot read " + attribute, e);
        }
      }
    }
  }

  private static String withoutDeleted(String backingFile) {
    return backingFile.endsWith(DELETED)
        ? backingFile.substring(0, backingFile.length() - DELETED.length())
        : backingFile;
  }

  /**
   * Opens a loop device node that LOOP_CTL_GET_FREE may have just created. devtmpfs creates the
   * node before the ioctl returns; without devtmpfs a udev-like daemon creates it soon after.
   */
  private static Fd openNode(Path device) {
    for (int attempt = 1; ; attempt++) {
      try {
        return Libc.open(device, LinuxUapi.O_RDWR());
      } catch (SyscallException e) {
        if (e.errno() != Errno.ENOENT || attempt == ATTEMPTS) {
          throw e;
        }
        pause();
      }
    }
  }

  private static boolean isLoopNode(Path device) {
    String name = device.getFileName() == null ? "" : device.getFileName().toString();
    if (!name.startsWith("loop") || name.length() == "loop".length()) {
      return false;
    }
    for (int i = "loop".length(); i < name.length(); i++) {
      if (name.charAt(i) < '0' || name.charAt(i) > '9') {
        return false;
      }
    }
    return true;
  }

  private static Path devicePath(int number) {
    return Path.of("/dev/loop" + number);
  }

  private static Path realPath(Path file) {
    try {
      return file.toRealPath();
    } catch (IOException e) {
      throw new StorageException("cannot resolve " + file, e);
    }
  }

  private static void pause() {
    Pauses.pause(RETRY, "interrupted while waiting for a loop device");
  }
}
