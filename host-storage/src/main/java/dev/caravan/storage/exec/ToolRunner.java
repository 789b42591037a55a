package dev.caravan.storage.exec;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.ToolException;
import dev.caravan.storage.internal.sys.Claims;
import dev.caravan.storage.internal.sys.Pty;
import dev.caravan.storage.internal.sys.Spawn;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * Runs helper binaries: the only place in Caravan that starts a process. The command is an argument
 * list, never a shell line, so nothing in it is ever interpreted. A tool's environment is ours
 * without our secrets ({@link ChildEnvironment}).
 */
public final class ToolRunner {
  private static final ProcessBuilder.Redirect NO_INPUT =
      ProcessBuilder.Redirect.from(new File("/dev/null"));
  /**
   * How long a killed tool's call waits for it to be reaped. SIGKILL ends a process only when it
   * leaves the kernel: one waiting there uninterruptibly (on a frozen filesystem, a stalled device)
   * goes on, and may still change the volume it was run for, until then.
   */
  static final Duration REAP_BOUND = Duration.ofMinutes(2);

  /** Tools this thread ran that were killed and had not exited when their call gave up on them. */
  private static final ThreadLocal<List<UnreapedTool>> UNREAPED = ThreadLocal.withInitial(ArrayList::new);

  private ToolRunner() {}

  /**
   * Runs {@code command} and waits up to {@code timeout}; on timeout the process and its
   * descendants are killed. Standard input is empty, so a tool that reads an answer from it reads
   * end-of-file instead of hanging. Tools that ask only when their standard input and output are
   * terminals (mke2fs) do not ask at all here: see {@link #runAtTerminal}.
   *
   * <p>A call that timed out returns only once the killed process is gone, up to {@link #REAP_BOUND};
   * one still there then is left to the caller: {@link #takeUnreaped} names it.
   *
   * @throws dev.caravan.storage.ToolException on a non-zero exit, and with exit code -1 on a
   *     timeout or when the binary cannot be started
   */
  public static ToolResult run(List<String> command, Duration timeout) {
    return run(command, timeout, REAP_BOUND);
  }

  static ToolResult run(List<String> command, Duration timeout, Duration reapBound) {
    List<String> cmd = List.copyOf(command);
    long started = System.nanoTime();
    Process process = Claims.whileStarting(() -> start(cmd));
    // Both pipes are drained while the process runs: a tool that fills one would block forever.
    CompletableFuture<String> stdout = drain(process.getInputStream());
    CompletableFuture<String> stderr = drain(process.getErrorStream());
    int exitCode = await(new StartedProcess(process), cmd, timeout, reapBound, () -> text(stderr));
    return new ToolResult(
        cmd, exitCode, text(stdout), text(stderr), Duration.ofNanos(System.nanoTime() - started));
  }

  /**
   * Runs {@code command} with a pseudo-terminal as its standard input, output and error, as if
   * someone sat at a console, and waits up to {@code timeout} as {@link #run} does. {@code typed}
   * is typed at the terminal before the tool starts, followed by end-of-input: a tool that asks
   * reads {@code typed} as its answer, and end-of-file if it asks again. The tool runs in a session
   * of its own, with {@code environment} added to ours.
   *
   * <p>What the terminal showed (standard output and error, interleaved as written) is the result's
   * {@link ToolResult#stdout()}, or the {@link ToolException#stderr()} of a failure.
   *
   * @throws dev.caravan.storage.ToolException on a non-zero exit, and with exit code -1 on a
   *     timeout or when the binary cannot be started
   */
  public static ToolResult runAtTerminal(
      List<String> command, String typed, Map<String, String> environment, Duration timeout) {
    List<String> cmd = List.copyOf(command);
    Map<String, String> env = new HashMap<>(ChildEnvironment.of(System.getenv()));
    env.putAll(environment);
    long started = System.nanoTime();
    Pty pty;
    int pid;
    try {
      pty = Pty.open();
    } catch (StorageException e) {
      throw new ToolException("cannot start: no terminal: " + e.getMessage(), cmd, -1, "", e);
    }
    try {
      pty.type(typed);
      pid =
          Claims.whileStarting(
              () -> Spawn.spawn(cmd, env, pty.terminal(), pty.terminal(), pty.terminal()));
    } catch (RuntimeException e) {
      pty.close();
      if (e instanceof StorageException) {
        throw new ToolException("cannot start: " + e.getMessage(), cmd, -1, "", e);
      }
      throw e;
    } finally {
      pty.closeTerminal(); // the child has its own copy; the master reads EIO once it is gone
    }
    CompletableFuture<String> screen = new CompletableFuture<>();
    platformThread(
        "tool terminal " + pid,
        () -> {
          String shown;
          try (pty) {
            shown = pty.readUntilHangup();
          } catch (RuntimeException e) {
            shown = "(unreadable: " + e.getMessage() + ")";
          }
          screen.complete(shown); // with the terminal closed: no process of ours still has it
        });
    int exitCode = await(SpawnedProcess.watch(pid), cmd, timeout, REAP_BOUND, () -> text(screen));
    return new ToolResult(
        cmd, exitCode, text(screen), "", Duration.ofNanos(System.nanoTime() - started));
  }

  private static Process start(List<String> cmd) {
    try {
      ProcessBuilder builder = new ProcessBuilder(cmd).redirectInput(NO_INPUT);
      Map<String, String> env = builder.environment();
      Map<String, String> allowed = ChildEnvironment.of(env);
      env.keySet().retainAll(allowed.keySet());
      return builder.start();
    } catch (IOException e) {
      throw new ToolException("cannot start: " + e.getMessage(), cmd, -1, "", e);
    }
  }

  /** A started child, as far as waiting for it and killing it go. */
  private interface Child {
    /** Whether it exited within {@code timeout}. */
    boolean waitFor(Duration timeout) throws InterruptedException;

    /** Kills it and its descendants. */
    void kill();

    int exitCode();

    long pid();

    /** Completes once it has exited and been reaped. */
    CompletableFuture<?> onExit();
  }

  /**
   * The tools this thread ran since the last call that were killed after their timeout and had not
   * exited when their call gave up waiting ({@link #REAP_BOUND}); the list is emptied. Whoever
   * serializes work on a volume keeps it busy until each is gone.
   */
  public static List<UnreapedTool> takeUnreaped() {
    List<UnreapedTool> taken = List.copyOf(UNREAPED.get());
    UNREAPED.remove();
    return taken;
  }

  /** Waits for {@code child}; returns its exit code, 0, or throws as {@link #run} documents. */
  private static int await(
      Child child, List<String> cmd, Duration timeout, Duration reapBound, Supplier<String> output) {
    try {
      if (!child.waitFor(timeout)) {
        String killed = kill(child, cmd, reapBound);
        throw new ToolException("timed out after " + timeout + ", " + killed, cmd, -1, output.get());
      }
    } catch (InterruptedException e) {
      String killed = kill(child, cmd, reapBound);
      Thread.currentThread().interrupt();
      throw new ToolException("interrupted, " + killed, cmd, -1, output.get(), e);
    }
    int exitCode = child.exitCode();
    if (exitCode != 0) {
      throw new ToolException("exited with " + exitCode, cmd, exitCode, output.get());
    }
    return exitCode;
  }

  /**
   * Kills {@code child} and waits for it to be reaped, up to {@code reapBound}: until then it may
   * still be at work. Says which of the two happened; one still there is recorded for {@link
   * #takeUnreaped}.
   */
  private static String kill(Child child, List<String> cmd, Duration reapBound) {
    child.kill();
    boolean interrupted = Thread.interrupted(); // the wait below must happen even so
    boolean reaped = false;
    long deadline = System.nanoTime() + reapBound.toNanos();
    while (!reaped) {
      try {
        reaped = child.waitFor(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
    if (reaped) {
      return "killed";
    }
    UNREAPED.get().add(new UnreapedTool(child.pid(), cmd, child.onExit()));
    return "killed, and process " + child.pid() + " had still not exited " + reapBound
        + " later (it waits in the kernel)";
  }

  private record StartedProcess(Process process) implements Child {
    @Override
    public boolean waitFor(Duration timeout) throws InterruptedException {
      return process.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    @Override
    public void kill() {
      process.descendants().forEach(ProcessHandle::destroyForcibly);
      process.destroyForcibly();
    }

    @Override
    public int exitCode() {
      return process.exitValue();
    }

    @Override
    public long pid() {
      return process.pid();
    }

    @Override
    public CompletableFuture<?> onExit() {
      return process.onExit();
    }
  }

  /**
   * A child started by {@link Spawn}. One thread waits for it to exit, then reaps it; a kill and
   * the reaping exclude each other, so a kill never reaches a process that reused the pid.
   */
  private static final class SpawnedProcess implements Child {
    private final int pid;
    private final CompletableFuture<Integer> exit = new CompletableFuture<>();
    private final Object reaping = new Object();
    private boolean reaped; // guarded by reaping

    private SpawnedProcess(int pid) {
      this.pid = pid;
    }

    static SpawnedProcess watch(int pid) {
      SpawnedProcess child = new SpawnedProcess(pid);
      platformThread("tool wait " + pid, child::waitAndReap);
      return child;
    }

    private void waitAndReap() {
      try {
        Spawn.awaitExit(pid);
        int exitCode;
        synchronized (reaping) {
          exitCode = Spawn.reap(pid);
          reaped = true;
        }
        exit.complete(exitCode);
      } catch (RuntimeException e) {
        exit.completeExceptionally(e);
      }
    }

    @Override
    public boolean waitFor(Duration timeout) throws InterruptedException {
      try {
        exit.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        return true;
      } catch (TimeoutException e) {
        return false;
      } catch (ExecutionException e) {
        return true; // exitCode() reports it
      }
    }

    @Override
    public void kill() {
      synchronized (reaping) {
        if (!reaped) {
          ProcessHandle.of(pid)
              .ifPresent(
                  process -> {
                    process.descendants().forEach(ProcessHandle::destroyForcibly);
                    process.destroyForcibly();
                  });
        }
      }
    }

    @Override
    public long pid() {
      return pid;
    }

    @Override
    public CompletableFuture<?> onExit() {
      return exit.exceptionally(e -> -1);
    }

    @Override
    public int exitCode() {
      try {
        return exit.join();
      } catch (RuntimeException e) {
        throw new StorageException("cannot wait for process " + pid, e);
      }
    }
  }

  // Blocking native calls (read, waitid) would pin a virtual thread's carrier: these get their own.
  private static void platformThread(String name, Runnable task) {
    Thread.ofPlatform().name(name).daemon().start(task);
  }

  private static CompletableFuture<String> drain(InputStream stream) {
    return CompletableFuture.supplyAsync(
        () -> {
          try (stream) {
            return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
          } catch (IOException e) {
            return "(unreadable: " + e.getMessage() + ")";
          }
        },
        task -> Thread.ofVirtual().start(task));
  }

  // Bounded: a grandchild that escaped the kill may hold the pipe open; better lose its output.
  private static String text(CompletableFuture<String> output) {
    return output.completeOnTimeout("", 10, TimeUnit.SECONDS).join();
  }
}
