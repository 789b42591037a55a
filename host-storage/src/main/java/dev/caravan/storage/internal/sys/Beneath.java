package dev.caravan.storage.internal.sys;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.SyscallException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * Opening a path below a directory descriptor without following any symlink on the way, and
 * creating directories and files there by descriptor, so that what was resolved is what a later
 * call acts on however the names change meanwhile.
 *
 * <p>With {@code openat2(2)} (Linux 5.6) the kernel resolves the whole relative path with {@code
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS}. Without it, each component is
 * opened in turn with {@code O_PATH | O_NOFOLLOW} from the previous one's descriptor (and {@code
 * O_DIRECTORY} for all but the last), which refuses a link just as well, one syscall per component.
 * openat2 has no glibc wrapper and the bindings carry no {@code open_how}: it is called through
 * {@code syscall(2)}, whose number is the same on every architecture (new syscalls share one table
 * from 424 on).
 */
public final class Beneath {
  private static final long SYS_OPENAT2 = 437;
  private static final long RESOLVE_NO_MAGICLINKS = 0x02;
  private static final long RESOLVE_NO_SYMLINKS = 0x04;
  private static final long RESOLVE_BENEATH = 0x08;
  private static final long OPEN_HOW_SIZE = 24;
  private static final int EAGAIN_RETRIES = 16;

  // Holder classes: each downcall stub is made on its first call, not at start-up (see Libc).
  private static final class SyscallOpenat2 {
    static final MethodHandle HANDLE =
        Syscalls.variadic(JAVA_LONG, JAVA_LONG, JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG);
  }

  private static final class Openat {
    static final MethodHandle HANDLE =
        Syscalls.variadic("openat", 3, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT);
  }

  private static final class Mkdirat {
    static final MethodHandle HANDLE = Libc.syscall("mkdirat", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);
  }

  private static final class Unlinkat {
    static final MethodHandle HANDLE = Libc.syscall("unlinkat", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);
  }
  private static final int AT_REMOVEDIR = 0x200;

  private Beneath() {}

  /** Whether this kernel has openat2 (asked once); without it, {@link #open} walks component by component. */
  public static boolean hasOpenat2() {
    return Support.OPENAT2;
  }

  /** {@code dir} itself as an {@code O_PATH} directory descriptor (symlinks on its way are followed). */
  public static Fd openDirectory(Path dir) {
    return Libc.open(dir, LinuxUapi.O_PATH() | LinuxUapi.O_DIRECTORY());
  }

  /**
   * {@code relative} (normalized, not empty, no {@code ..}) opened {@code O_PATH} below {@code dir},
   * following no symlink and no magic link on the way and at the end; {@code directory} requires a
   * directory there. A link anywhere is ELOOP (openat2) or ENOTDIR/ELOOP (the walk).
   */
  public static Fd open(Fd dir, Path relative, boolean directory) {
    return open(dir, relative, directory, hasOpenat2());
  }

  /** {@link #open(Fd, Path, boolean)} by openat2 or by the walk, as {@code openat2} says. */
  public static Fd open(Fd dir, Path relative, boolean directory, boolean openat2) {
    requireBelow(relative);
    int flags = LinuxUapi.O_PATH() | LinuxUapi.O_CLOEXEC() | (directory ? LinuxUapi.O_DIRECTORY() : 0);
    String label = dir.path() + "/" + relative;
    if (openat2) {
      return openat2(dir, relative.toString(), flags, label);
    }
    Fd current = dir;
    try {
      for (int i = 0; i < relative.getNameCount(); i++) {
        boolean last = i == relative.getNameCount() - 1;
        int f = LinuxUapi.O_PATH() | LinuxUapi.O_NOFOLLOW() | LinuxUapi.O_CLOEXEC()
            | (!last || directory ? LinuxUapi.O_DIRECTORY() : 0);
        Fd next = openat(current, relative.getName(i).toString(), f, 0, label);
        if (current.number() != dir.number()) {
          current.close();
        }
        current = next;
        if (last && Libc.fstat(current).isSymlink()) {
          throw Libc.failure(Errno.ELOOP, "open (no symlinks)", label);
        }
      }
      return current;
    } catch (RuntimeException e) {
      if (current.number() != dir.number()) {
        current.close();
      }
      throw e;
    }
  }

  /** mkdirat(2): {@code name} (one component) in {@code dir}, with {@code mode} less the umask. */
  public static void mkdirat(Fd dir, String name, int mode) {
    requireName(name);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment cName = arena.allocateFrom(name);
      Libc.call(arena, state -> (int) Mkdirat.HANDLE.invokeExact(state, dir.number(), cName, mode), "mkdirat", dir, name,
          Integer.toOctalString(mode));
    }
  }

  /** unlinkat(2) of {@code name} (one component) in {@code dir}: an empty directory when {@code directory}. */
  public static void unlinkat(Fd dir, String name, boolean directory) {
    requireName(name);
    int flags = directory ? AT_REMOVEDIR : 0;
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment cName = arena.allocateFrom(name);
      Libc.call(arena, state -> (int) Unlinkat.HANDLE.invokeExact(state, dir.number(), cName, flags), "unlinkat", dir, name);
    }
  }

  /** A new empty file {@code name} (one component) in {@code dir}: O_CREAT|O_EXCL|O_NOFOLLOW, closed again. */
  public static void createFile(Fd dir, String name, int mode) {
    requireName(name);
    int flags = LinuxUapi.O_WRONLY() | LinuxUapi.O_CREAT() | LinuxUapi.O_EXCL() | LinuxUapi.O_NOFOLLOW()
        | LinuxUapi.O_CLOEXEC();
    openat(dir, name, flags, mode, dir.path() + "/" + name).close();
  }

  private static Fd openat(Fd dir, String name, int flags, int mode, String label) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment cName = arena.allocateFrom(name);
      int fd = (int) Libc.call(arena,
          state -> (int) Openat.HANDLE.invokeExact(state, dir.number(), cName, flags, mode), "openat", label,
          "0x" + Integer.toHexString(flags));
      return new Fd(fd, label);
    }
  }

  private static Fd openat2(Fd dir, String relative, int flags, String label) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment cPath = arena.allocateFrom(relative);
      MemorySegment how = arena.allocate(OPEN_HOW_SIZE, 8);
      how.set(JAVA_LONG, 0, flags);
      how.set(JAVA_LONG, 8, 0L);
      how.set(JAVA_LONG, 16, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
      for (int attempt = 1; ; attempt++) {
        try {
          long fd = Libc.call(arena,
              state -> (long) SyscallOpenat2.HANDLE.invokeExact(state, SYS_OPENAT2, dir.number(), cPath, how, OPEN_HOW_SIZE),
              "openat2", label, "RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS");
          return new Fd((int) fd, label);
        } catch (SyscallException e) {
          // EAGAIN: a rename or mount during the lookup; the kernel asks for a retry.
          if (e.errno() != Errno.EAGAIN || attempt == EAGAIN_RETRIES) {
            throw e;
          }
        }
      }
    }
  }

  private static void requireBelow(Path relative) {
    if (relative.isAbsolute() || relative.toString().isEmpty() || !relative.equals(relative.normalize())
        || relative.startsWith("..")) {
      throw new IllegalArgumentException("not a normalized path below a directory: '" + relative + "'");
    }
  }

  private static void requireName(String name) {
    if (name.isEmpty() || name.contains("/") || name.equals(".") || name.equals("..")) {
      throw new IllegalArgumentException("not a single path component: '" + name + "'");
    }
  }

  private static final class Support {
    static final boolean OPENAT2 = probe();

    private static boolean probe() {
      try (Fd root = openDirectory(Path.of("/"));
          Fd tmp = openat2(root, "tmp", LinuxUapi.O_PATH() | LinuxUapi.O_CLOEXEC(), "/tmp")) {
        return tmp.number() >= 0;
      } catch (SyscallException e) {
        // ENOSYS: a kernel before 5.6; EPERM: a seccomp filter that does not know the call. ENOENT
        // (no /tmp) still proves the call exists.
        return e.errno() == Errno.ENOENT;
      }
    }
  }
}
