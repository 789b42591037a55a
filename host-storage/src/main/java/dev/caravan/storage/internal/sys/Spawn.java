package dev.caravan.storage.internal.sys;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.SyscallException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Starts a child process with {@code posix_spawnp}, for the one case {@link ProcessBuilder} cannot
 * serve: a child whose standard streams are descriptors we opened ourselves (a pseudo-terminal
 * opened with {@code O_NOCTTY}, see {@link Pty}). ProcessBuilder can only redirect to a file it
 * opens by name itself.
 *
 * <p>The child is waited for and reaped here too ({@code waitid}, {@code waitpid}): the JDK reaps
 * only the processes it started.
 */
public final class Spawn {
  private static final Linker LINKER = Linker.nativeLinker();

  // posix_spawn_file_actions_t is 80 bytes and posix_spawnattr_t 336 in glibc on x86_64; both are
  // opaque and set up only through their functions, so a generous allocation is all that matters.
  private static final long OPAQUE_SIZE = 1024;
  private static final long SIGSET_SIZE = 128;
  private static final short POSIX_SPAWN_SETSIGDEF = 0x04;
  private static final short POSIX_SPAWN_SETSIGMASK = 0x08;
  private static final short POSIX_SPAWN_SETSID = 0x80;
  private static final int P_PID = 1;
  private static final int WEXITED = 4;
  private static final int WNOWAIT = 0x01000000;
  // siginfo_t, which waitid fills and we do not read.
  private static final long SIGINFO_SIZE = 128;

  // Holder classes: each downcall stub is made on its first call, not at start-up (see Libc).
  // These return an error number instead of setting errno.
  private static final class PosixSpawnp {
    static final MethodHandle HANDLE =
        plain("posix_spawnp", JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS, ADDRESS);
  }

  private static final class ActionsInit {
    static final MethodHandle HANDLE = plain("posix_spawn_file_actions_init", JAVA_INT, ADDRESS);
  }

  private static final class ActionsDestroy {
    static final MethodHandle HANDLE = plain("posix_spawn_file_actions_destroy", JAVA_INT, ADDRESS);
  }

  private static final class ActionsDup2 {
    static final MethodHandle HANDLE =
        plain("posix_spawn_file_actions_adddup2", JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT);
  }

  // glibc 2.34 and later.
  private static final Optional<MethodHandle> ACTIONS_CLOSEFROM =
      LINKER
          .defaultLookup()
          .find("posix_spawn_file_actions_addclosefrom_np")
          .map(
              address ->
                  LINKER.downcallHandle(
                      address, FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT)));
  private static final class AttrInit {
    static final MethodHandle HANDLE = plain("posix_spawnattr_init", JAVA_INT, ADDRESS);
  }

  private static final class AttrDestroy {
    static final MethodHandle HANDLE = plain("posix_spawnattr_destroy", JAVA_INT, ADDRESS);
  }

  private static final class AttrSetflags {
    static final MethodHandle HANDLE = plain("posix_spawnattr_setflags", JAVA_INT, ADDRESS, JAVA_SHORT);
  }

  private static final class AttrSetsigmask {
    static final MethodHandle HANDLE = plain("posix_spawnattr_setsigmask", JAVA_INT, ADDRESS, ADDRESS);
  }

  private static final class AttrSetsigdefault {
    static final MethodHandle HANDLE = plain("posix_spawnattr_setsigdefault", JAVA_INT, ADDRESS, ADDRESS);
  }

  // These two fail only on an invalid pointer, so their -1 is reported like an error number.
  private static final class Sigemptyset {
    static final MethodHandle HANDLE = plain("sigemptyset", JAVA_INT, ADDRESS);
  }

  private static final class Sigfillset {
    static final MethodHandle HANDLE = plain("sigfillset", JAVA_INT, ADDRESS);
  }

  private static final class Waitid {
    static final MethodHandle HANDLE =
        Libc.syscall("waitid", JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);
  }

  private static final class Waitpid {
    static final MethodHandle HANDLE = Libc.syscall("waitpid", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);
  }

  private Spawn() {}

  /**
   * Starts {@code command} (its first element is looked up on PATH) and returns its pid, which the
   * caller must {@link #reap}. {@code stdin}, {@code stdout} and {@code stderr} become its
   * descriptors 0, 1 and 2, and it inherits no other descriptor. It runs in a session of its own,
   * with no signal blocked and every signal at its default disposition (except the two that glibc
   * reserves for itself, 32 and 33, which glibc keeps ignored), in {@code environment} (the whole
   * environment, not additions to ours).
   *
   * @throws SyscallException when it cannot be started, e.g. ENOENT for a command not on PATH
   */
  public static int spawn(
      List<String> command, Map<String, String> environment, Fd stdin, Fd stdout, Fd stderr) {
    MethodHandle closeFrom =
        ACTIONS_CLOSEFROM.orElseThrow(
            () ->
                new StorageException(
                    "posix_spawn_file_actions_addclosefrom_np is missing: glibc 2.34 or later"
                        + " is needed to start a child without leaking descriptors into it"));
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment actions = arena.allocate(OPAQUE_SIZE, 16);
      MemorySegment attributes = arena.allocate(OPAQUE_SIZE, 16);
      check("posix_spawn_file_actions_init", (int) ActionsInit.HANDLE.invokeExact(actions));
      try {
        check("posix_spawnattr_init", (int) AttrInit.HANDLE.invokeExact(attributes));
        try {
          int[][] dups = {{stdin.number(), 0}, {stdout.number(), 1}, {stderr.number(), 2}};
          for (int[] dup : dups) {
            check(
                "posix_spawn_file_actions_adddup2",
                (int) ActionsDup2.HANDLE.invokeExact(actions, dup[0], dup[1]));
          }
          check(
              "posix_spawn_file_actions_addclosefrom_np", (int) closeFrom.invokeExact(actions, 3));

          MemorySegment noSignals = arena.allocate(SIGSET_SIZE, 8);
          MemorySegment allSignals = arena.allocate(SIGSET_SIZE, 8);
          check("sigemptyset", (int) Sigemptyset.HANDLE.invokeExact(noSignals));
          check("sigfillset", (int) Sigfillset.HANDLE.invokeExact(allSignals));
          check(
              "posix_spawnattr_setsigmask",
              (int) AttrSetsigmask.HANDLE.invokeExact(attributes, noSignals));
          check(
              "posix_spawnattr_setsigdefault",
              (int) AttrSetsigdefault.HANDLE.invokeExact(attributes, allSignals));
          short flags = POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
          check("posix_spawnattr_setflags", (int) AttrSetflags.HANDLE.invokeExact(attributes, flags));

          MemorySegment pid = arena.allocate(JAVA_INT);
          MemorySegment file = arena.allocateFrom(command.getFirst());
          MemorySegment argv = strings(arena, command);
          MemorySegment envp =
              strings(
                  arena,
                  environment.entrySet().stream()
                      .map(e -> e.getKey() + "=" + e.getValue())
                      .toList());
          int error = (int) PosixSpawnp.HANDLE.invokeExact(pid, file, actions, attributes, argv, envp);
          if (error != 0) {
            throw Libc.failure(error, "posix_spawnp", command.getFirst());
          }
          return pid.get(JAVA_INT, 0);
        } finally {
          check("posix_spawnattr_destroy", (int) AttrDestroy.HANDLE.invokeExact(attributes));
        }
      } finally {
        check("posix_spawn_file_actions_destroy", (int) ActionsDestroy.HANDLE.invokeExact(actions));
      }
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new AssertionError("a downcall threw a checked exception", t);
    }
  }

  /** Blocks until child {@code pid} has exited, without reaping it: its pid stays reserved. */
  public static void awaitExit(int pid) {
    while (true) {
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment info = arena.allocate(SIGINFO_SIZE, 8);
        Libc.call(
            arena,
            state -> (int) Waitid.HANDLE.invokeExact(state, P_PID, pid, info, WEXITED | WNOWAIT),
            "waitid",
            pid);
        return;
      } catch (SyscallException e) {
        if (e.errno() != Errno.EINTR) {
          throw e;
        }
      }
    }
  }

  /**
   * Waits for child {@code pid} and reaps it. Returns its exit code, or 128 plus the signal's
   * number when a signal ended it (as {@link Process#exitValue()} does).
   */
  public static int reap(int pid) {
    while (true) {
      try (Arena arena = Arena.ofConfined()) {
        MemorySegment status = arena.allocate(JAVA_INT);
        Libc.call(arena, state -> (int) Waitpid.HANDLE.invokeExact(state, pid, status, 0), "waitpid", pid);
        int raw = status.get(JAVA_INT, 0);
        int signal = raw & 0x7f;
        return signal == 0 ? (raw >> 8) & 0xff : 128 + signal;
      } catch (SyscallException e) {
        if (e.errno() != Errno.EINTR) {
          throw e;
        }
      }
    }
  }

  /** A NULL-terminated array of C strings. */
  private static MemorySegment strings(Arena arena, List<String> values) {
    MemorySegment array = arena.allocate(ADDRESS, values.size() + 1L); // zeroed: ends in NULL
    for (int i = 0; i < values.size(); i++) {
      array.setAtIndex(ADDRESS, i, arena.allocateFrom(values.get(i)));
    }
    return array;
  }

  private static void check(String operation, int error) {
    if (error != 0) {
      throw Libc.failure(error, operation);
    }
  }

  private static MethodHandle plain(String name, ValueLayout result, MemoryLayout... arguments) {
    return LINKER.downcallHandle(
        LINKER.defaultLookup().findOrThrow(name), FunctionDescriptor.of(result, arguments));
  }
}
