package dev.caravan.storage.mount;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.MountConflictException;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.SyscallException;
import dev.caravan.storage.internal.Pauses;
import dev.caravan.storage.internal.sys.Errno;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.internal.sys.NativeAccess;
import dev.caravan.storage.internal.sys.Stat;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Mounts and unmounts through mount(2) and umount2(2). Every operation is idempotent, because a
 * container orchestrator retries: asking again for what is already there succeeds, asking for
 * something different where something is mounted is a {@link MountConflictException}.
 *
 * <p>"What is already there" is decided as follows. For a device mount: the topmost mount at the
 * target is the same device (its {@code major:minor}) showing its whole filesystem (root {@code
 * /}); a source that is not a block device (tmpfs, an NFS export) is compared by name. For a bind
 * mount: what the target shows is the very inode the source is (same {@code st_dev} and {@code
 * st_ino}), which holds for directories, files and device nodes alike and needs no reasoning about
 * which mount the source lives in. In both cases read-only must match too.
 *
 * <p>A symlink at the target is never followed: mount(2) would follow it and mount wherever it
 * points, so {@link #mount} and {@link #bind} refuse it, and {@link #unmount} treats it as not
 * mounted and unmounts with {@code UMOUNT_NOFOLLOW}, so that a link swapped in after the check
 * still cannot make it unmount another mount.
 */
public final class Mounts {
  // The check-then-mount in each operation must not interleave for one target within this JVM. One
  // lock per target path, there only while an operation holds or awaits it: an unmount can wait in
  // the kernel for as long as its device queues I/O (a stalled iSCSI target, queue_if_no_path), and
  // then it must hold up that path alone, never an unrelated one that shared a lock stripe with it.
  private static final ConcurrentHashMap<Path, TargetLock> LOCKS = new ConcurrentHashMap<>();
  private static final int BUSY_ATTEMPTS = 50;
  private static final Duration BUSY_PAUSE = Duration.ofMillis(20);

  private Mounts() {}

  /**
   * Mounts the filesystem on {@code device} at {@code target} (which must exist). {@code data} is
   * the filesystem-specific option string, or null.
   */
  public static void mount(
      Path device, Path target, String fsType, Set<MountFlag> flags, String data) {
    NativeAccess.require();
    boolean readOnly = flags.contains(MountFlag.READ_ONLY);
    try (Held held = lock(target)) {
      refuseSymlink(target);
      Optional<MountEntry> existing = MountTable.at(target);
      if (existing.isPresent()) {
        MountEntry entry = existing.get();
        if (!isDevice(entry, device)) {
          throw new MountConflictException(target, entry.source(), "not " + device);
        }
        requireReadOnly(entry, readOnly);
        return;
      }
      Libc.mount(device.toString(), target, fsType, MountFlag.bits(flags), data);
    }
  }

  /**
   * Bind-mounts {@code source} (a directory, a file or a device node) onto {@code target} (of the
   * same kind: a directory for a directory, a file for a file or device node). A read-only bind is
   * a bind followed by a read-only remount of it, since the kernel ignores MS_RDONLY on the bind
   * itself; if that remount fails the bind is undone rather than left writable.
   */
  public static void bind(Path source, Path target, boolean readOnly) {
    NativeAccess.require();
    try (Held held = lock(target)) {
      refuseSymlink(target);
      Optional<MountEntry> existing = MountTable.at(target);
      if (existing.isPresent()) {
        MountEntry entry = existing.get();
        Stat wanted = Libc.stat(source);
        Stat shown = Libc.stat(target);
        if (wanted.dev() != shown.dev() || wanted.inode() != shown.inode()) {
          throw new MountConflictException(target, entry.source(), "not a bind of " + source);
        }
        requireReadOnly(entry, readOnly);
        return;
      }
      Libc.mount(source.toString(), target, null, LinuxUapi.MS_BIND(), null);
      if (readOnly) {
        try {
          remountReadOnly(target);
        } catch (StorageException e) {
          try {
            Libc.umount2(target, 0);
          } catch (SyscallException undo) {
            e.addSuppressed(undo);
          }
          throw e;
        }
      }
    }
  }

  /**
   * Unmounts the topmost mount at {@code target}. Returns false, and does nothing, when {@code
   * target} is not a mount point (or does not exist, or is a symlink); true when a mount was
   * removed.
   *
   * <p>EBUSY is retried for up to a second before it is thrown: a process this JVM forks holds
   * copies of all the JVM's descriptors until it execs (Java opens files without O_CLOEXEC), so a
   * file just closed here can keep the filesystem busy for a moment while another thread starts
   * mkfs.
   */
  public static boolean unmount(Path target) {
    NativeAccess.require();
    try (Held held = lock(target)) {
      // umount2 resolves the path as isMountPoint did (parents followed, the last component not)
      if (!MountTable.isMountPoint(target)) {
        return false;
      }
      return umountNoFollow(target);
    }
  }

  /** umount2 with UMOUNT_NOFOLLOW, EBUSY retried (see {@link #unmount}); false on EINVAL (not mounted). */
  static boolean umountNoFollow(Path target) {
    for (int attempt = 1; ; attempt++) {
      try {
        Libc.umount2(target, LinuxUapi.UMOUNT_NOFOLLOW());
        return true;
      } catch (SyscallException e) {
        if (e.errno() == Errno.EINVAL) {
          return false; // unmounted by someone else since we looked
        }
        if (e.errno() != Errno.EBUSY || attempt == BUSY_ATTEMPTS) {
          throw e;
        }
      }
      Pauses.pause(BUSY_PAUSE, "interrupted while unmounting");
    }
  }

  /**
   * The remount must repeat the bind's own nosuid, nodev and noexec (inherited from the source's
   * mount): MS_REMOUNT|MS_BIND replaces the per-mount flags, and dropping them would make the
   * read-only view less restricted than its source.
   */
  private static void remountReadOnly(Path target) {
    MountEntry bind =
        MountTable.at(target)
            .orElseThrow(() -> new StorageException(target + " is not mounted after bind"));
    Set<MountFlag> flags = EnumSet.of(MountFlag.READ_ONLY);
    for (String option : bind.mountOptions().split(",", -1)) {
      MountFlag.fromOption(option).ifPresent(flags::add);
    }
    Libc.mount(
        null,
        target,
        null,
        LinuxUapi.MS_REMOUNT() | LinuxUapi.MS_BIND() | MountFlag.bits(flags),
        null);
  }

  private static void refuseSymlink(Path target) {
    if (Files.isSymbolicLink(target)) {
      throw new StorageException(
          "refusing to mount on " + target + ": it is a symlink, and mount(2) would follow it");
    }
  }

  // A source that is not a block device (tmpfs, an NFS export) can only be compared by name.
  static boolean isDevice(MountEntry entry, Path device) {
    if (Files.exists(device)) {
      Stat stat = Libc.stat(device);
      if (stat.isBlockDevice()) {
        return stat.rdevMajorMinor().equals(entry.majorMinor()) && entry.root().equals("/");
      }
    }
    return entry.source().equals(device.toString());
  }

  static void requireReadOnly(MountEntry entry, boolean readOnly) {
    if (entry.readOnly() != readOnly) {
      throw new MountConflictException(
          entry.mountPoint(),
          entry.source(),
          "mounted " + (entry.readOnly() ? "read-only" : "read-write"));
    }
  }

  /** A target path's lock, with how many operations hold or await it (changed only in the map's compute). */
  private static final class TargetLock {
    final ReentrantLock lock = new ReentrantLock();
    int users;
  }

  /** The lock of one target, held until closed. */
  interface Held extends AutoCloseable {
    @Override
    void close();
  }

  static Held lock(Path target) {
    Path key = target.toAbsolutePath().normalize();
    TargetLock t = LOCKS.compute(key, (k, existing) -> {
      TargetLock l = existing == null ? new TargetLock() : existing;
      l.users++;
      return l;
    });
    t.lock.lock();
    return () -> {
      t.lock.unlock();
      LOCKS.computeIfPresent(key, (k, l) -> --l.users == 0 ? null : l);
    };
  }

  /** How many target paths have a lock now: none once no operation runs (the map does not grow). */
  static int lockedTargets() {
    return LOCKS.size();
  }
}
