package dev.caravan.csi.scenario;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.support.CrashPoints;
import dev.caravan.csi.server.CsiServer;
import dev.caravan.csi.testing.PluginJvm;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * A fixture's plugin as a process of its own ({@code caravan serve}, with the fixture's settings), so
 * that it can die for real: armed with a crash point, it halts the moment it reaches that step.
 * {@link #close()} kills it if it is still running.
 */
public final class ForkedPlugin implements AutoCloseable {
  /** Under TCG in the guest a JVM needs minutes to come up; on the host a second or two. */
  private static final long START_SECONDS = 300;

  private final Process process;
  private final Path log;

  private ForkedPlugin(Process process, Path log) {
    this.process = process;
    this.log = log;
  }

  /** Starts {@code caravan serve} on {@code f}'s socket, data directory and options; returns once it answers. */
  public static ForkedPlugin start(PluginFixture f, String crashAt) throws IOException, InterruptedException {
    return start(f, crashAt, "off", Map.of());
  }

  /**
   * The same, its observe API on {@code httpListen} ({@code --http-listen}), with {@code env} added to
   * its environment (a Nomad task's, for its Nomad layer).
   */
  public static ForkedPlugin start(PluginFixture f, String crashAt, String httpListen, Map<String, String> env)
      throws IOException, InterruptedException {
    Plugin.Settings s = f.settings();
    Path config = f.work.resolve("forked.properties");
    Properties p = new Properties();
    s.options().forEach((k, v) -> p.setProperty(s.driver() + "." + k, v));
    try (Writer w = Files.newBufferedWriter(config, StandardCharsets.UTF_8)) {
      p.store(w, null);
    }
    Path log = f.work.resolve("forked-" + crashAt + ".log");
    List<String> command = PluginJvm.java();
    command.addAll(List.of("-D" + CrashPoints.PROPERTY + "=" + crashAt, "dev.caravan.csi.cli.Main", "serve",
        "--driver=" + s.driver(), "--endpoint", "unix://" + s.socket(), "--node-id", s.nodeId(),
        "--data-dir", s.dataDir().toString(), "--journal-dir", s.journalDir().toString(), "--plugin-name", s.pluginName(), "--http-listen", httpListen,
        "--config", config.toString(),
        // The threads are not a flag: they stay the default.
        "--luks-iter-time=" + s.keyCosts().luks().iterTime().toMillis(),
        "--luks-pbkdf-memory=" + s.keyCosts().luks().memoryKiB(),
        "--zfs-pbkdf2-iters=" + s.keyCosts().zfs().count()));
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
    builder.environment().putAll(env);
    Process process = builder.start();
    ForkedPlugin forked = new ForkedPlugin(process, log);
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(START_SECONDS);
    while (!CsiServer.isLive(s.socket())) {
      if (!process.isAlive() || System.nanoTime() > deadline) {
        forked.close();
        throw new AssertionError("the forked plugin did not come up: " + forked.log());
      }
      Thread.sleep(50);
    }
    return forked;
  }

  /** Waits up to {@code seconds} for the process to end; its exit status, or empty while it still runs. */
  public OptionalInt exitStatus(long seconds) throws InterruptedException {
    return process.waitFor(seconds, TimeUnit.SECONDS) ? OptionalInt.of(process.exitValue())
        : OptionalInt.empty();
  }

  /** What the process printed (stdout and stderr). */
  public String log() {
    try {
      return Files.readString(log);
    } catch (IOException e) {
      return "(no log: " + e.getMessage() + ")";
    }
  }

  @Override
  public void close() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor(30, TimeUnit.SECONDS);
  }
}
