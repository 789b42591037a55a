package dev.caravan.benchmarks.harness;

import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.ProbeRequest;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A {@code caravan serve} process started through {@code bin/caravan}, exactly as an operator or
 * Nomad's raw_exec driver starts it (bin/caravan execs the JVM, so the process id is the JVM's).
 *
 * <p>This uses {@link ProcessBuilder} directly, not host-storage's {@code ToolRunner}: ToolRunner
 * runs a tool to completion, and the server has to keep running while the harness talks to it and
 * reads its memory. This is benchmark code, not part of the driver, which never starts a process
 * except through ToolRunner.
 */
final class ServerProcess implements AutoCloseable {
  private final Process process;
  private final long startNanos;
  private final Path socket;
  private final Path log;

  private ServerProcess(Process process, long startNanos, Path socket, Path log) {
    this.process = process;
    this.startNanos = startNanos;
    this.socket = socket;
    this.log = log;
  }

  /**
   * Starts {@code <launcher> serve} on the file backend with its socket and data directory under
   * {@code work}, plus {@code extraArgs} (e.g. {@code --http-listen=127.0.0.1:0} where the server
   * has an HTTP endpoint, so that runs never collide with another plugin's port).
   */
  static ServerProcess start(Path launcher, Path work, Map<String, String> env, List<String> extraArgs)
      throws IOException {
    // Nomad's host layout (<state_dir>/csi/plugins/<alloc-id>/csi.sock) makes <work>/nomad/csi the
    // plugin's default allowed root, which holds the harness's mount root.
    Path socket = work.resolve("nomad/csi/plugins/bench/csi.sock");
    Path log = work.resolve("server.log");
    List<String> command = new ArrayList<>(List.of(launcher.toString(), "serve", "--driver", "file",
        "--endpoint", "unix://" + socket, "--data-dir", work.resolve("data").toString(),
        "--node-id", "bench-node"));
    command.addAll(extraArgs);
    ProcessBuilder pb = new ProcessBuilder(command)
        .redirectErrorStream(true)
        .redirectOutput(log.toFile())
        .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
    pb.environment().putAll(env);
    long start = System.nanoTime();
    Process p = pb.start();
    return new ServerProcess(p, start, socket, log);
  }

  Path socket() {
    return socket;
  }

  long pid() {
    return process.pid();
  }

  /**
   * Polls until Probe answers ready=true and returns the nanoseconds from just before the process
   * was started. The socket file is polled every 0.5 ms first (cheap); then each attempt opens a
   * fresh channel and calls Probe with a short deadline, as a CO that just saw the socket would.
   */
  long awaitProbeReady(Duration timeout) throws InterruptedException {
    long deadline = startNanos + timeout.toNanos();
    while (System.nanoTime() < deadline) {
      if (!process.isAlive()) {
        throw new IllegalStateException("caravan serve exited with " + process.exitValue() + " before Probe was ready; "
            + tail());
      }
      if (Files.exists(socket)) {
        try (UnixChannel ch = new UnixChannel(socket)) {
          boolean ready = IdentityGrpc.newBlockingStub(ch.channel()).withDeadlineAfter(1, TimeUnit.SECONDS)
              .probe(ProbeRequest.getDefaultInstance()).getReady().getValue();
          if (ready) {
            return System.nanoTime() - startNanos;
          }
        } catch (StatusRuntimeException e) {
          // not listening yet (or a stale file): try again
        }
      }
      TimeUnit.MICROSECONDS.sleep(500);
    }
    throw new IllegalStateException("caravan serve did not answer Probe ready within " + timeout + "; " + tail());
  }

  /** VmRSS and its parts from /proc/&lt;pid&gt;/status, in KiB, e.g. {VmRSS=..., RssAnon=..., RssFile=...}. */
  Map<String, Long> rss() throws IOException {
    Map<String, Long> out = new java.util.LinkedHashMap<>();
    for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid()), "status"), StandardCharsets.US_ASCII)) {
      for (String key : List.of("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM", "Threads")) {
        if (line.startsWith(key + ":")) {
          out.put(key, Long.parseLong(line.substring(key.length() + 1).trim().split("\\s+", -1)[0]));
        }
      }
    }
    return out;
  }

  String tail() {
    try {
      List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
      return "server log " + log + " ends: " + String.join("\n", lines.subList(Math.max(0, lines.size() - 15), lines.size()));
    } catch (IOException e) {
      return "server log " + log + " unreadable: " + e.getMessage();
    }
  }

  /** SIGTERM (the server drains and removes its socket), then SIGKILL if it has not exited in 15 s. */
  @Override
  public void close() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(15, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(5, TimeUnit.SECONDS);
    }
  }
}
