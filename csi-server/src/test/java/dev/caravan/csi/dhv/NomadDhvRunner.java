package dev.caravan.csi.dhv;

import dev.caravan.csi.support.Json;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Runs a DHV plugin executable the way a Nomad client agent does (§3 of nomad-dhv.md): argv is the
 * operation alone; the environment is replaced by exactly the given {@code DHV_*} variables (no
 * PATH, HOME, JAVA_HOME); stdin is empty; stdout and stderr are captured; at the deadline the direct
 * child gets SIGKILL (Go's exec.CommandContext; Java's destroyForcibly is SIGKILL too) and nothing
 * else, and the runner then waits for stdout to close, as Go's Wait does.
 */
public final class NomadDhvRunner {
  /** Nomad's limits: fingerprint runs under the 1 s discovery context, the other operations under 60 s. */
  static final Duration FINGERPRINT_DEADLINE = Duration.ofSeconds(1);
  public static final Duration OP_DEADLINE = Duration.ofSeconds(60);

  /** How long stdout may stay open after the kill before we call it held by a grandchild. */
  private static final Duration AFTER_KILL = Duration.ofSeconds(5);

  private NomadDhvRunner() {}

  /**
   * One run's outcome.
   *
   * @param exitStatus the exit status; -1 when killed at the deadline
   * @param killed whether the deadline passed and the child was SIGKILLed
   * @param stdoutClosed whether stdout reached end-of-file (false: a grandchild still holds it)
   */
  public record Outcome(int exitStatus, boolean killed, boolean stdoutClosed, String stdout, String stderr, Duration took) {
    /** stdout as Nomad parses it: one JSON object. */
    public Map<String, Object> json() {
      Object v = Json.parse(stdout.strip());
      if (!(v instanceof Map<?, ?> m)) {
        throw new AssertionError("stdout is not a JSON object: " + stdout);
      }
      Map<String, Object> out = new LinkedHashMap<>();
      m.forEach((k, val) -> out.put(String.valueOf(k), val));
      return out;
    }

    @Override
    public String toString() {
      return "exit " + exitStatus + (killed ? " (killed)" : "") + " after " + took.toMillis() + " ms; stdout: "
          + stdout.strip() + "; stderr:\n" + stderr;
    }
  }

  public static Outcome run(Path executable, String operation, Map<String, String> env, Duration deadline) {
    ProcessBuilder pb = new ProcessBuilder(executable.toString(), operation)
        .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
    pb.environment().clear();
    pb.environment().putAll(env);
    long start = System.nanoTime();
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot start " + executable, e);
    }
    CompletableFuture<String> stdout = drain(p.getInputStream());
    CompletableFuture<String> stderr = drain(p.getErrorStream());
    boolean killed = false;
    try {
      if (!p.waitFor(deadline.toNanos(), TimeUnit.NANOSECONDS)) {
        killed = true;
        p.destroyForcibly();
        p.waitFor();
      }
      boolean closed;
      String out;
      try {
        out = stdout.get(AFTER_KILL.toMillis(), TimeUnit.MILLISECONDS);
        closed = true;
      } catch (TimeoutException e) {
        out = "";
        closed = false;
      }
      String err = stderr.getNow("");
      if (!killed) {
        err = stderr.get(AFTER_KILL.toMillis(), TimeUnit.MILLISECONDS);
      }
      return new Outcome(killed ? -1 : p.exitValue(), killed, closed, out, err,
          Duration.ofNanos(System.nanoTime() - start));
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      p.destroyForcibly();
      throw new AssertionError("interrupted", e);
    } catch (ExecutionException | TimeoutException e) {
      throw new AssertionError("cannot read the plugin's output", e);
    }
  }

  private static CompletableFuture<String> drain(InputStream in) {
    CompletableFuture<String> f = new CompletableFuture<>();
    Thread.ofVirtual().start(() -> {
      try (in) {
        f.complete(new String(in.readAllBytes(), StandardCharsets.UTF_8));
      } catch (IOException e) {
        f.completeExceptionally(e);
      }
    });
    return f;
  }
}
