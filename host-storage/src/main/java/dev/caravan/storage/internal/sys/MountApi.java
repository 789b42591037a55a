package dev.caravan.storage.internal.sys;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.SyscallException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Map;

/**
 * The descriptor-based mount API: a mount is made detached ({@code open_tree} clones one for a
 * bind, {@code fsopen}/{@code fsconfig}/{@code fsmount} make a fresh filesystem's) and attached onto
 * a directory <em>descriptor</em> with {@code move_mount}, so no name is resolved at the moment of
 * mounting. Linux 5.2 added these; {@code mount_setattr} (to make a detached bind read-only before
 * anyone can see it) came with 5.12. glibc 2.36 wraps some of them and the bindings none, so all
 * go through {@code syscall(2)}: their numbers are the same on every architecture.
 */
public final class MountApi {
  private static final long SYS_OPEN_TREE = 428;
  private static final long SYS_MOVE_MOUNT = 429;
  private static final long SYS_FSOPEN = 430;
  private static final long SYS_FSCONFIG = 431;
  private static final long SYS_FSMOUNT = 432;
  private static final long SYS_MOUNT_SETATTR = 442;

  private static final int AT_EMPTY_PATH = 0x1000;
  private static final int OPEN_TREE_CLONE = 1;
  private static final int MOVE_MOUNT_F_EMPTY_PATH = 0x04;
  private static final int MOVE_MOUNT_T_EMPTY_PATH = 0x40;
  private static final int FSOPEN_CLOEXEC = 1;
  private static final int FSMOUNT_CLOEXEC = 1;
  private static final int FSCONFIG_SET_FLAG = 0;
  private static final int FSCONFIG_SET_STRING = 1;
  private static final int FSCONFIG_CMD_CREATE = 6;
  private static final long MOUNT_ATTR_SIZE = 32;

  /** The per-mount attributes of {@code fsmount} and {@code mount_setattr} (linux/mount.h). */
  public static final int MOUNT_ATTR_RDONLY = 0x01;
  public static final int MOUNT_ATTR_NOSUID = 0x02;
  public static final int MOUNT_ATTR_NODEV = 0x04;
  public static final int MOUNT_ATTR_NOEXEC = 0x08;
  public static final int MOUNT_ATTR_NOATIME = 0x10;
  public static final int MOUNT_ATTR_STRICTATIME = 0x20;
  public static final int MOUNT_ATTR_NODIRATIME = 0x80;

  // Holder classes: each downcall stub is made on its first call, not at start-up (see Libc).
  // syscall(number, int, const char *, unsigned int) and the like: every shape used below.
  private static final class IntPathInt {
    static final MethodHandle HANDLE = Syscalls.variadic(JAVA_LONG, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT);
  }

  private static final class MoveMount {
    static final MethodHandle HANDLE =
        Syscalls.variadic(JAVA_LONG, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT);
  }

  private static final class PathInt {
    static final MethodHandle HANDLE = Syscalls.variadic(JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_INT);
  }

  private static final class Fsconfig {
    static final MethodHandle HANDLE =
        Syscalls.variadic(JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT);
  }

  private static final class Fsmount {
    static final MethodHandle HANDLE = Syscalls.variadic(JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT);
  }

  private static final class MountSetattr {
    static final MethodHandle HANDLE =
        Syscalls.variadic(JAVA_LONG, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_LONG);
  }

  private MountApi() {}

  /**
   * Whether this kernel has the whole API used here, {@code mount_setattr} included (Linux 5.12):
   * asked once, with a descriptor that cannot be valid, so only ENOSYS (or a seccomp EPERM) says no.
   */
  public static boolean supported() {
    return Support.SUPPORTED;
  }

  /** A detached copy of the mount at {@code source} (not its submounts), as a bind would make. */
  public static Fd cloneTree(Fd source) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment empty = arena.allocateFrom("");
      int flags = OPEN_TREE_CLONE | LinuxUapi.O_CLOEXEC() | AT_EMPTY_PATH;
      long fd = Libc.call(arena,
          state -> (long) IntPathInt.HANDLE.invokeExact(state, SYS_OPEN_TREE, source.number(), empty, flags),
          "open_tree", source, "OPEN_TREE_CLONE");
      return new Fd((int) fd, "detached bind of " + source);
    }
  }

  /** Sets {@code attributes} (MOUNT_ATTR_*) on the detached or attached mount {@code mount}. */
  public static void setAttributes(Fd mount, int attributes) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment empty = arena.allocateFrom("");
      MemorySegment attr = arena.allocate(MOUNT_ATTR_SIZE, 8);
      attr.set(JAVA_LONG, 0, attributes);
      long size = MOUNT_ATTR_SIZE;
      Libc.call(arena,
          state -> (long) MountSetattr.HANDLE.invokeExact(state, SYS_MOUNT_SETATTR, mount.number(), empty, AT_EMPTY_PATH,
              attr, size),
          "mount_setattr", mount, "0x" + Integer.toHexString(attributes));
    }
  }

  /**
   * A detached mount of a fresh {@code fsType} filesystem from {@code source}: {@code parameters}
   * are the filesystem's options (a null value is a flag, like {@code ro} or {@code nouuid}), then
   * the superblock is created and mounted with the per-mount {@code attributes} (MOUNT_ATTR_*).
   */
  public static Fd newMount(String fsType, String source, Map<String, String> parameters, int attributes) {
    try (Arena arena = Arena.ofConfined(); Fd context = fsopen(arena, fsType)) {
      fsconfig(arena, context, FSCONFIG_SET_STRING, "source", source);
      for (Map.Entry<String, String> p : parameters.entrySet()) {
        fsconfig(arena, context, p.getValue() == null ? FSCONFIG_SET_FLAG : FSCONFIG_SET_STRING, p.getKey(),
            p.getValue());
      }
      fsconfig(arena, context, FSCONFIG_CMD_CREATE, null, null);
      long fd = Libc.call(arena,
          state -> (long) Fsmount.HANDLE.invokeExact(state, SYS_FSMOUNT, context.number(), FSMOUNT_CLOEXEC, attributes),
          "fsmount", fsType, source, "0x" + Integer.toHexString(attributes));
      return new Fd((int) fd, "detached " + fsType + " mount of " + source);
    }
  }

  /** Attaches the detached mount {@code mount} onto the directory (or file) {@code target}. */
  public static void attach(Fd mount, Fd target) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment empty = arena.allocateFrom("");
      int flags = MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH;
      Libc.call(arena,
          state -> (long) MoveMount.HANDLE.invokeExact(state, SYS_MOVE_MOUNT, mount.number(), empty, target.number(), empty,
              flags),
          "move_mount", mount, target);
    }
  }

  private static Fd fsopen(Arena arena, String fsType) {
    MemorySegment cType = arena.allocateFrom(fsType);
    long fd = Libc.call(arena, state -> (long) PathInt.HANDLE.invokeExact(state, SYS_FSOPEN, cType, FSOPEN_CLOEXEC),
        "fsopen", fsType);
    return new Fd((int) fd, "filesystem context " + fsType);
  }

  private static void fsconfig(Arena arena, Fd context, int command, String key, String value) {
    MemorySegment cKey = key == null ? MemorySegment.NULL : arena.allocateFrom(key);
    MemorySegment cValue = value == null ? MemorySegment.NULL : arena.allocateFrom(value);
    Libc.call(arena,
        state -> (long) Fsconfig.HANDLE.invokeExact(state, SYS_FSCONFIG, context.number(), command, cKey, cValue, 0),
        "fsconfig", context, command, key == null ? "" : key, value == null ? "" : value);
  }

  private static final class Support {
    static final boolean SUPPORTED = probe();

    private static boolean probe() {
      try {
        setAttributes(new Fd(-1, "(probe)"), 0);
        return true;
      } catch (SyscallException e) {
        return e.errno() != Errno.ENOSYS && e.errno() != Errno.EPERM;
      }
    }
  }
}
