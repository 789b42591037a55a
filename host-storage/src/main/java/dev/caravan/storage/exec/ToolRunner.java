package dev.caravan.storage.exec;

import dev.caravan.storage.ToolException;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Runs helper binaries: the only place in Caravan that starts a process. The command is an argument
 * list, never a shell line, so nothing in it is ever interpreted. Standard input is empty, so a
 * tool that stops to ask "Proceed anyway?" reads end-of-file and gives up instead of hanging
 * (formatting relies on this: mkfs.ext4 then refuses a device that gained a signature since it was
 * probed).
 */
public final class ToolRunner {
  private static final ProcessBuilder.Redirect NO_INPUT =
      ProcessBuilder.Redirect.from(new File("/dev/null"));

  private ToolRunner() {}

  /**
   * Runs {@code command} and waits up to {@code timeout}; on timeout the process and its
   * descendants are killed.
   *
   * @throws dev.caravan.storage.ToolException on a non-zero exit, and with exit code -1 on a
   *     timeout or when the binary cannot be started
   */
  public static ToolResult run(List<String> command, Duration timeout) {
    List<String> cmd = List.copyOf(command);
    long started = System.nanoTime();
    Process process;
    try {
      process = new ProcessBuilder(cmd).redirectInput(NO_INPUT).start();
    } catch (IOException e) {
      throw new ToolException("cannot start: " + e.getMessage(), cmd, -1, "", e);
    }
    // Both pipes are drained while the process runs: a tool that fills one would block forever.
    CompletableFuture<String> stdout = drain(process.getInputStream());
    CompletableFuture<String> stderr = drain(process.getErrorStream());
    try {
      if (!process.waitFor(timeout.toNanos(), TimeUnit.NANOSECONDS)) {
        kill(process);
        throw new ToolException("timed out after " + timeout + ", killed", cmd, -1, text(stderr));
      }
    } catch (InterruptedException e) {
      kill(process);
      Thread.currentThread().interrupt();
      throw new ToolException("interrupted, killed", cmd, -1, text(stderr), e);
    }
    int exitCode = process.exitValue();
    if (exitCode != 0) {
      throw new ToolException("exited with " + exitCode, cmd, exitCode, text(stderr));
    }
    return new ToolResult(
        cmd, exitCode, text(stdout), text(stderr), Duration.ofNanos(System.nanoTime() - started));
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

  private static void kill(Process process) {
    process.descendants().forEach(ProcessHandle::destroyForcibly);
    process.destroyForcibly();
    try {
      process.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  // Bounded: a grandchild that escaped the kill may hold the pipe open; better lose its output.
  private static String text(CompletableFuture<String> output) {
    return output.completeOnTimeout("", 10, TimeUnit.SECONDS).join();
  }
}
