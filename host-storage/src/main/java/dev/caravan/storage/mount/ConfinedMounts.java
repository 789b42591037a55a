package dev.caravan.storage.mount;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.MountConflictException;
import dev.caravan.storage.PathEscapeException;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.SyscallException;
import dev.caravan.storage.internal.sys.Beneath;
import dev.caravan.storage.internal.sys.Errno;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Libc;
import dev.caravan.storage.internal.sys.MountApi;
import dev.caravan.storage.internal.sys.NativeAccess;
import dev.caravan.storage.internal.sys.Stat;
import dev.caravan.storage.internal.sys.Statx;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Mounts, unmounts and creates paths that must lie below a root directory, without a window between
 * checking a path and using it. Each path is resolved from a descriptor of its root, following no
 * symlink ({@link Beneath}), and the operation then acts on the descriptor it got, never on the
 * name again: whoever can rename or swap in links below the root cannot make a mount land, a
 * directory appear or an unmount happen anywhere else. Every operation is idempotent, as {@link
 * Mounts}' are.
 *
 * <p>How a mount is made onto a descriptor depends on the kernel ({@link #mode()}): with openat2 and
 * the descriptor mount API the mount is made detached and attached to the target descriptor with
 * {@code move_mount}; on older kernels the path is resolved by an {@code O_NOFOLLOW} walk and
 * mount(2) is given {@code /proc/self/fd/N}, a magic link to exactly that descriptor.
 *
 * <p>Unmounting checks by {@code statx} that the mount at the target is the one expected (its mount
 * id, recorded when it was made) and then unmounts {@code /proc/self/fd/P/name}: the parent is the
 * resolved descriptor and the last component is not followed ({@code UMOUNT_NOFOLLOW}); a mount
 * point itself cannot be renamed, so it is the one just checked.
 */
public final class ConfinedMounts {
  private static final int DIRECTORY_MODE = 0777; // less the umask, as mkdir(1) makes it
  private static final int FILE_MODE = 0666;

  /** How paths are resolved and mounts made on this kernel. */
  public enum Mode {
    DESCRIPTORS("openat2 (RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) and mounts attached by descriptor (open_tree,"
        + " fsmount, move_mount)"),
    PROC_FD("an O_NOFOLLOW walk and mount(2) through /proc/self/fd (no openat2 or no mount_setattr: a kernel"
        + " before 5.12)");

    private final String description;

    Mode(String description) {
      this.description = description;
    }

    public String description() {
      return description;
    }
  }

  private ConfinedMounts() {}

  /** The way this kernel allows: {@link Mode#DESCRIPTORS} from Linux 5.12 on. */
  public static Mode mode() {
    NativeAccess.require();
    Mode f = forced;
    return f != null ? f : Detected.MODE;
  }

  // Lets a test run the older kernels' way on a new kernel; null means as detected.
  private static volatile Mode forced;

  static void force(Mode mode) {
    forced = mode;
  }

  private static final class Detected {
    static final Mode MODE = Beneath.hasOpenat2() && MountApi.supported() ? Mode.DESCRIPTORS : Mode.PROC_FD;
  }

  private static boolean openat2() {
    return mode() == Mode.DESCRIPTORS;
  }

  /** Creates {@code dir} and its missing parents below {@code root}; true when {@code dir} was created. */
  public static boolean makeDirectories(Path root, Path dir) {
    NativeAccess.require();
    Path relative = relative(root, dir);
    try (Fd r = Beneath.openDirectory(root); Walked walked = walkCreating(r, relative, dir, root)) {
      return walked.made();
    }
  }

  /**
   * Creates the empty file {@code file} (and its missing parent directories) below {@code root};
   * true when it was created, false when something is there already.
   */
  public static boolean createFile(Path root, Path file) {
    NativeAccess.require();
    Path relative = relative(root, file);
    try (Fd r = Beneath.openDirectory(root); Fd parent = parent(r, relative, file, root, true)) {
      try {
        Beneath.createFile(parent, relative.getFileName().toString(), FILE_MODE);
        return true;
      } catch (SyscallException e) {
        if (e.errno() == Errno.EEXIST) {
          return false;
        }
        throw escapeOr(e, file, root);
      }
    }
  }

  /**
   * Removes {@code path} below {@code root} if it is an empty directory or an empty regular file;
   * returns false (and leaves it) when it is anything else, a non-empty directory included, or gone.
   */
  public static boolean removeIfEmpty(Path root, Path path) {
    NativeAccess.require();
    Path relative = relative(root, path);
    try (Fd r = Beneath.openDirectory(root); Fd parent = parent(r, relative, path, root, false)) {
      String name = relative.getFileName().toString();
      Stat stat;
      try (Fd it = Beneath.open(parent, Path.of(name), false, openat2())) {
        stat = Libc.fstat(it);
      }
      boolean directory = stat.isDirectory();
      if (!directory && !(stat.isRegularFile() && stat.size() == 0)) {
        return false;
      }
      Beneath.unlinkat(parent, name, directory);
      return true;
    } catch (SyscallException e) {
      if (e.errno() == Errno.ENOENT || e.errno() == Errno.ENOTEMPTY || e.errno() == Errno.EBUSY) {
        return false;
      }
      throw escapeOr(e, path, root);
    }
  }

  /**
   * Bind-mounts {@code source} (below {@code sourceRoot}) onto {@code target} (below {@code
   * targetRoot}), read-only if asked; returns the bind's mount id. Already bound there (the target
   * shows the source's very inode, read-only matching) is success; anything else mounted there is a
   * {@link MountConflictException}.
   */
  public static int bind(Path sourceRoot, Path source, Path targetRoot, Path target, boolean readOnly) {
    NativeAccess.require();
    try (Fd sr = Beneath.openDirectory(sourceRoot); Fd s = resolve(sr, sourceRoot, source, false)) {
      return bind(s, source, targetRoot, target, readOnly);
    }
  }

  /** {@link #bind} of a device node (a path outside any root: the backend named it) onto a file target. */
  public static int bindDevice(Path device, Path targetRoot, Path target, boolean readOnly) {
    NativeAccess.require();
    try (Fd s = Libc.open(device, LinuxUapi.O_PATH())) {
      return bind(s, device, targetRoot, target, readOnly);
    }
  }

  private static int bind(Fd s, Path source, Path targetRoot, Path target, boolean readOnly) {
    try (Mounts.Held held = Mounts.lock(target);
        Fd tr = Beneath.openDirectory(targetRoot);
        Fd t = resolve(tr, targetRoot, target, false)) {
      OptionalInt there = alreadyMounted(t, target, readOnly, entry -> sameInode(s, t), "not a bind of " + source);
      if (there.isPresent()) {
        return there.getAsInt();
      }
      if (mode() == Mode.DESCRIPTORS) {
        try (Fd tree = MountApi.cloneTree(s)) {
          if (readOnly) {
            MountApi.setAttributes(tree, MountApi.MOUNT_ATTR_RDONLY); // before anyone can see it writable
          }
          MountApi.attach(tree, t);
          return Statx.of(tree).mountId();
        }
      }
      Libc.mount(proc(s).toString(), proc(t), null, LinuxUapi.MS_BIND(), null);
      try (Fd mounted = resolve(tr, targetRoot, target, false)) {
        if (readOnly) {
          remountReadOnly(mounted, target);
        }
        return Statx.of(mounted).mountId();
      }
    }
  }

  /**
   * Mounts the {@code fsType} filesystem on {@code device} at {@code target} below {@code root};
   * returns the mount id. {@code data} is the filesystem's option string ({@code a=b,c}) or null.
   * Already mounted there (the same device, its whole filesystem, read-only matching) is success.
   */
  public static int mount(Path device, Path root, Path target, String fsType, Set<MountFlag> flags, String data) {
    NativeAccess.require();
    boolean readOnly = flags.contains(MountFlag.READ_ONLY);
    try (Mounts.Held held = Mounts.lock(target);
        Fd r = Beneath.openDirectory(root);
        Fd t = resolve(r, root, target, true)) {
      OptionalInt there = alreadyMounted(t, target, readOnly, entry -> Mounts.isDevice(entry, device), "not " + device);
      if (there.isPresent()) {
        return there.getAsInt();
      }
      if (mode() == Mode.DESCRIPTORS) {
        try (Fd m = MountApi.newMount(fsType, device.toString(), parameters(flags, data), attributes(flags))) {
          MountApi.attach(m, t);
          return Statx.of(m).mountId();
        }
      }
      Libc.mount(device.toString(), proc(t), fsType, MountFlag.bits(flags), data);
      try (Fd mounted = resolve(r, root, target, true)) {
        return Statx.of(mounted).mountId();
      }
    }
  }

  /**
   * The mount already at {@code t}, when there is one: a repeat of the same mount ({@code same}, the
   * read-only-ness matching) is success and gives its id; anything else mounted there is a {@link
   * MountConflictException} saying it is {@code notWhat}, and it stays. Empty when nothing is mounted.
   */
  private static OptionalInt alreadyMounted(Fd t, Path target, boolean readOnly, Predicate<MountEntry> same,
      String notWhat) {
    Statx at = Statx.of(t);
    if (!at.mountRoot()) {
      return OptionalInt.empty();
    }
    MountEntry entry = entry(at.mountId(), target);
    if (!same.test(entry)) {
      throw new MountConflictException(target, entry.source(), notWhat);
    }
    Mounts.requireReadOnly(entry, readOnly);
    return OptionalInt.of(at.mountId());
  }

  /** {@code t} shows {@code s}'s very inode: a bind of it. */
  private static boolean sameInode(Fd s, Fd t) {
    Stat wanted = Libc.fstat(s);
    Stat shown = Libc.fstat(t);
    return wanted.dev() == shown.dev() && wanted.inode() == shown.inode();
  }

  /**
   * The id of the mount whose root {@code path} (below {@code root}) is; empty when nothing is
   * mounted there or the path does not exist.
   */
  public static OptionalInt mountId(Path root, Path path) {
    NativeAccess.require();
    try (Fd r = Beneath.openDirectory(root); Fd p = resolve(r, root, path, false)) {
      Statx at = Statx.of(p);
      return at.mountRoot() ? OptionalInt.of(at.mountId()) : OptionalInt.empty();
    } catch (PathEscapeException e) {
      throw e;
    } catch (SyscallException e) {
      if (e.errno() == Errno.ENOENT) {
        return OptionalInt.empty();
      }
      throw e;
    }
  }

  /**
   * Unmounts the topmost mount at {@code target} (below {@code root}) if it is the mount {@code
   * expected} (any mount when empty: a record from before ids were kept); returns false when nothing
   * is mounted there (or the path is gone or a symlink). A different mount there is a {@link
   * MountConflictException}, and it stays. EBUSY is retried for up to a second, as {@link
   * Mounts#unmount} does.
   */
  public static boolean unmount(Path root, Path target, OptionalInt expected) {
    NativeAccess.require();
    Path relative = relative(root, target);
    String name = relative.getFileName().toString();
    try (Mounts.Held held = Mounts.lock(target);
        Fd r = Beneath.openDirectory(root);
        Fd parent = parent(r, relative, target, root, false)) {
      Statx at;
      try (Fd t = Beneath.open(parent, Path.of(name), false, openat2())) {
        at = Statx.of(t);
      } catch (SyscallException e) {
        if (e.errno() == Errno.ENOENT || e.errno() == Errno.ELOOP) {
          return false; // gone, or a symlink: nothing of ours is mounted on a link
        }
        throw e;
      }
      if (!at.mountRoot()) {
        return false;
      }
      if (expected.isPresent() && expected.getAsInt() != at.mountId()) {
        throw new MountConflictException(target, "mount " + at.mountId(),
            "not the mount " + expected.getAsInt() + " made there; leaving it");
      }
      return Mounts.umountNoFollow(proc(parent).resolve(name));
    } catch (SyscallException e) {
      if (e.errno() == Errno.ENOENT) {
        return false;
      }
      throw escapeOr(e, target, root);
    }
  }

  // ---- resolution ------------------------------------------------------------------------------

  private static Path relative(Path root, Path path) {
    Path p = path.normalize();
    if (!p.startsWith(root) || p.equals(root) || !p.equals(path)) {
      throw new IllegalArgumentException(path + " is not a normalized path strictly below " + root);
    }
    return root.relativize(p);
  }

  /** {@code path} resolved below the open root {@code r}; a link on the way is a {@link PathEscapeException}. */
  private static Fd resolve(Fd r, Path root, Path path, boolean directory) {
    try {
      return Beneath.open(r, relative(root, path), directory, openat2());
    } catch (SyscallException e) {
      throw escapeOr(e, path, root);
    }
  }

  /** The parent directory of {@code relative} below {@code r} (the root itself for one component). */
  private static Fd parent(Fd r, Path relative, Path path, Path root, boolean create) {
    Path up = relative.getParent();
    if (up == null) {
      return Beneath.openDirectory(root);
    }
    return create ? walkCreating(r, up, path, root).fd() : resolve(r, root, root.resolve(up), true);
  }

  /** The directory a walk ended on, and whether the walk made it. */
  private record Walked(Fd fd, boolean made) implements AutoCloseable {
    @Override
    public void close() {
      fd.close();
    }
  }

  /** Opens each component of {@code relative} in turn below {@code r}, making the missing ones. */
  private static Walked walkCreating(Fd r, Path relative, Path path, Path root) {
    Fd current = r;
    boolean made = false;
    try {
      for (Path component : relative) {
        Fd next;
        made = false;
        try {
          next = Beneath.open(current, component, true, openat2());
        } catch (SyscallException e) {
          if (e.errno() != Errno.ENOENT) {
            throw e;
          }
          try {
            Beneath.mkdirat(current, component.toString(), DIRECTORY_MODE);
            made = true;
          } catch (SyscallException exists) {
            if (exists.errno() != Errno.EEXIST) {
              throw exists;
            }
          }
          next = Beneath.open(current, component, true, openat2());
        }
        if (current.number() != r.number()) {
          current.close();
        }
        current = next;
      }
      if (current.number() == r.number()) {
        throw new IllegalArgumentException("nothing to create below " + root);
      }
      return new Walked(current, made);
    } catch (SyscallException e) {
      if (current.number() != r.number()) {
        current.close();
      }
      throw escapeOr(e, path, root);
    }
  }

  private static StorageException escapeOr(SyscallException e, Path path, Path root) {
    return switch (e.errno()) {
      case Errno.ELOOP, Errno.ENOTDIR, Errno.EXDEV -> new PathEscapeException(path, root, e);
      default -> e;
    };
  }

  // ---- helpers ---------------------------------------------------------------------------------

  /** The magic link to exactly what {@code fd} was opened on. */
  private static Path proc(Fd fd) {
    return Path.of("/proc/self/fd/" + fd.number());
  }

  private static MountEntry entry(int mountId, Path target) {
    return MountTable.read().stream().filter(m -> m.id() == mountId).findFirst()
        .orElseThrow(() -> new StorageException("the mount at " + target + " (id " + mountId + ") is gone from"
            + " mountinfo"));
  }

  /** The read-only remount of a fresh bind, through the descriptor of its root (see Mounts#bind). */
  private static void remountReadOnly(Fd mounted, Path target) {
    MountEntry bind = entry(Statx.of(mounted).mountId(), target);
    Set<MountFlag> flags = EnumSet.of(MountFlag.READ_ONLY);
    for (String option : bind.mountOptions().split(",", -1)) {
      MountFlag.fromOption(option).ifPresent(flags::add);
    }
    Libc.mount(null, proc(mounted), null,
        LinuxUapi.MS_REMOUNT() | LinuxUapi.MS_BIND() | MountFlag.bits(flags), null);
  }

  /** The superblock's parameters: the data string's options, then the flags that are superblock flags. */
  static Map<String, String> parameters(Set<MountFlag> flags, String data) {
    Map<String, String> p = new LinkedHashMap<>();
    if (data != null && !data.isEmpty()) {
      for (String option : data.split(",", -1)) {
        if (option.isEmpty()) {
          continue;
        }
        int eq = option.indexOf('=');
        p.put(eq < 0 ? option : option.substring(0, eq), eq < 0 ? null : option.substring(eq + 1));
      }
    }
    for (MountFlag f : flags) {
      switch (f) {
        case READ_ONLY, SYNCHRONOUS, DIRSYNC, LAZYTIME -> p.put(f.option(), null);
        default -> { }
      }
    }
    return p;
  }

  /** The per-mount attributes (MOUNT_ATTR_*) of {@code flags}. */
  static int attributes(Set<MountFlag> flags) {
    int a = 0;
    for (MountFlag f : flags) {
      a |= switch (f) {
        case READ_ONLY -> MountApi.MOUNT_ATTR_RDONLY;
        case NO_SUID -> MountApi.MOUNT_ATTR_NOSUID;
        case NO_DEV -> MountApi.MOUNT_ATTR_NODEV;
        case NO_EXEC -> MountApi.MOUNT_ATTR_NOEXEC;
        case NO_ATIME -> MountApi.MOUNT_ATTR_NOATIME;
        case STRICTATIME -> MountApi.MOUNT_ATTR_STRICTATIME;
        case NO_DIRATIME -> MountApi.MOUNT_ATTR_NODIRATIME;
        case RELATIME, SYNCHRONOUS, DIRSYNC, LAZYTIME -> 0; // relatime is the default; the rest are the superblock's
      };
    }
    return a;
  }

}
