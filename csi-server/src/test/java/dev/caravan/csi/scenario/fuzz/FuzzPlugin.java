package dev.caravan.csi.scenario.fuzz;

import dev.caravan.csi.scenario.PluginFixture;
import dev.caravan.csi.scenario.PluginProcess;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import java.io.IOException;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * Where the fuzz's one plugin runs, and how to see its mounts and its log: a process of its own in a
 * private mount namespace (so that a wrongly accepted path cannot mount over a directory of the
 * machine the tests share), or this JVM (in a throwaway guest, where a second JVM costs minutes to
 * start under the emulated CPU).
 */
abstract sealed class FuzzPlugin implements AutoCloseable {
  static FuzzPlugin start(PluginFixture f, boolean isolated) throws IOException, InterruptedException {
    return isolated ? new Isolated(PluginProcess.start(f, true)) : new InProcess(f);
  }

  /** The mount table as the plugin sees it. */
  abstract List<MountEntry> mounts() throws IOException;

  abstract boolean isAlive();

  /** Everything the plugin logged so far. */
  abstract String log() throws IOException;

  @Override
  public abstract void close() throws InterruptedException;

  static final class Isolated extends FuzzPlugin {
    private final PluginProcess process;

    Isolated(PluginProcess process) {
      this.process = process;
    }

    @Override
    List<MountEntry> mounts() throws IOException {
      return process.mounts();
    }

    @Override
    boolean isAlive() {
      return process.isAlive();
    }

    @Override
    String log() throws IOException {
      return process.log();
    }

    @Override
    public void close() throws InterruptedException {
      process.close();
    }
  }

  static final class InProcess extends FuzzPlugin {
    private final PluginFixture fixture;
    /** Records come from the plugin's handler threads. */
    private final java.util.concurrent.ConcurrentLinkedQueue<String> log = new java.util.concurrent.ConcurrentLinkedQueue<>();
    private final Handler capture = new Handler() {
      private final SimpleFormatter format = new SimpleFormatter();

      @Override
      public void publish(LogRecord record) {
        log.add(format.format(record));
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };

    InProcess(PluginFixture fixture) throws IOException {
      this.fixture = fixture;
      Logger.getLogger("").addHandler(capture);
      fixture.startPlugin();
    }

    @Override
    List<MountEntry> mounts() {
      return MountTable.read();
    }

    @Override
    boolean isAlive() {
      return fixture.plugin() != null;
    }

    @Override
    String log() {
      return String.join("", log);
    }

    @Override
    public void close() {
      fixture.stopPlugin();
      Logger.getLogger("").removeHandler(capture);
    }
  }
}
