package dev.caravan.csi.scenario;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.server.CsiServer;
import dev.caravan.csi.testing.PluginJvm;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A fixture's plugin as its own JVM ({@code caravan serve}), the way Nomad runs it: for tests that
 * kill it, or that must keep its mounts out of the test's own mount namespace. {@link #start} returns
 * once the socket answers and the fixture's stubs are connected to it.
 */
public final class PluginProcess implements AutoCloseable {
  private final PluginFixture fixture;
  private final Process process;
  private final Path log;

  private PluginProcess(PluginFixture fixture, Process process, Path log) {
    this.fixture = fixture;
    this.process = process;
    this.log = log;
  }

  /** A plugin process on the fixture's settings, in the test's mount namespace. */
  public static PluginProcess start(PluginFixture fixture) throws IOException, InterruptedException {
    return start(fixture, false);
  }

  /**
   * A plugin process on the fixture's settings. With {@code privateMounts} it runs in a mount
   * namespace of its own ({@code unshare --mount --propagation private}): whatever it mounts stays
   * there and disappears with it, so a test may send it requests that, answered wrongly, would mount
   * over host directories. Loop devices, files and datasets are not namespaced.
   */
  public static PluginProcess start(PluginFixture fixture, boolean privateMounts) throws IOException, InterruptedException {
    return start(fixture, privateMounts, List.of());
  }

  /** A plugin process on the fixture's settings whose JVM also takes {@code jvmOptions}. */
  public static PluginProcess start(PluginFixture fixture, boolean privateMounts, List<String> jvmOptions)
      throws IOException, InterruptedException {
    Plugin.Settings s = fixture.settings();
    Path config = Files.createTempFile(fixture.work, "caravan-", ".properties");
    StringBuilder text = new StringBuilder();
    s.options().forEach((k, v) -> text.append(s.driver()).append('.').append(k).append('=').append(v).append('\n'));
    Files.writeString(config, text);
    List<String> command = new ArrayList<>();
    if (privateMounts) {
      command.addAll(List.of("unshare", "--mount", "--propagation", "private"));
    }
    command.addAll(PluginJvm.caravan(jvmOptions, List.of("serve", "--http-listen=off",
        "--driver=" + s.driver(), "--endpoint", "unix://" + s.socket(), "--node-id", s.nodeId(),
        "--data-dir", s.dataDir().toString(), "--journal-dir", s.journalDir().toString(), "--config", config.toString())));
    Path log = Files.createTempFile(fixture.work, "plugin-", ".log");
    Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    PluginProcess plugin = new PluginProcess(fixture, p, log);
    // Minutes under TCG in the guest when the host is busy too; ForkedPlugin waits as long.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(300);
    while (!CsiServer.isLive(s.socket())) {
      if (!p.isAlive() || System.nanoTime() > deadline) {
        plugin.close();
        throw new AssertionError("plugin did not come up: " + Files.readString(log));
      }
      Thread.sleep(50);
    }
    fixture.connect();
    return plugin;
  }

  long pid() {
    return process.pid();
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  /** The mount table as this plugin sees it (its own namespace, when it has one). */
  public List<MountEntry> mounts() throws IOException {
    return MountTable.parse(Files.readString(Path.of("/proc", Long.toString(process.pid()), "mountinfo")));
  }

  /** SIGKILL, as the OOM killer or a node crash would; returns the exit code (137). */
  int kill() throws InterruptedException {
    fixture.disconnect();
    process.destroyForcibly();
    if (!process.waitFor(20, TimeUnit.SECONDS)) {
      throw new AssertionError("plugin process " + process.pid() + " outlived SIGKILL by 20 s");
    }
    return process.exitValue();
  }

  /** What the plugin logged, for failure messages. */
  public String log() throws IOException {
    return Files.readString(log);
  }

  /** SIGTERM (a bounded drain), then SIGKILL if it does not exit. */
  @Override
  public void close() throws InterruptedException {
    fixture.disconnect();
    process.destroy();
    if (!process.waitFor(20, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      process.waitFor(20, TimeUnit.SECONDS);
    }
  }
}
