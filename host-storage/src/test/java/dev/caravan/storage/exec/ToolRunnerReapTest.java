package dev.caravan.storage.exec;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.ToolException;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.fs.Frozen;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.testing.Scratch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A tool killed after its timeout may go on in the kernel: one writing to a frozen filesystem waits
 * there uninterruptibly, SIGKILL or not, until the thaw. Its call returns only once it is gone.
 */
class ToolRunnerReapTest {
  private static final long MIB = 1L << 20;

  @RegisterExtension final Scratch scratch = new Scratch();

  private LoopDevice loop;
  private Path mnt;
  private Frozen frozen;

  @BeforeEach
  void frozenFilesystem() throws Exception {
    HostRequirements.assumeRootWithLoopDevices();
    loop = LoopDevices.attach(scratch.image("disk.img", 32 * MIB), false);
    mnt = scratch.directory("mnt");
    Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of());
    Mounts.mount(loop.device(), mnt, "ext4", Set.of(), null);
    frozen = Filesystems.freeze(mnt);
  }

  @AfterEach
  void thaw() {
    if (loop == null) {
      return;
    }
    frozen.close();
    Mounts.unmount(mnt);
    LoopDevices.detach(loop);
  }

  /** A tool that writes to the frozen filesystem, its pid in {@code pidFile} (outside it). */
  private List<String> writerTool(Path pidFile) {
    return List.of("sh", "-c", "echo $$ > " + pidFile + "; exec touch " + mnt.resolve("stuck"));
  }

  @Test
  void aTimedOutToolsCallReturnsOnlyOnceTheToolIsGone() throws Exception {
    Path pidFile = scratch.dir().resolve("pid");
    // Later than the runner ever gave up on a killed tool before: its wait, then its wait for the output.
    Duration thawAfter = Duration.ofSeconds(25);
    long started = System.nanoTime();
    Thread thawer = Thread.ofPlatform().start(() -> {
      try {
        Thread.sleep(thawAfter);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      frozen.close();
    });

    assertThatThrownBy(() -> ToolRunner.run(writerTool(pidFile), Duration.ofMillis(500)))
        .isInstanceOfSatisfying(ToolException.class, e -> assertThat(e).hasMessageContaining("timed out"));
    Duration returnedAfter = Duration.ofNanos(System.nanoTime() - started);
    long pid = Long.parseLong(Files.readString(pidFile).strip());

    assertThat(Path.of("/proc/" + pid)).as("the killed tool, when its call returned after %s", returnedAfter)
        .doesNotExist();
    assertThat(returnedAfter).as("when the call returned: only after the thaw let the tool die")
        .isGreaterThanOrEqualTo(thawAfter);
    thawer.join();
  }

  @Test
  void aToolStillThereAfterTheBoundIsNamedForTheCallerToWaitOn() throws Exception {
    Path pidFile = scratch.dir().resolve("pid");
    ToolRunner.takeUnreaped(); // nothing of an earlier test on this thread

    assertThatThrownBy(() -> ToolRunner.run(writerTool(pidFile), Duration.ofMillis(500), Duration.ofSeconds(1)))
        .isInstanceOfSatisfying(ToolException.class, e -> assertThat(e)
            .hasMessageContaining("timed out")
            .hasMessageContaining("process " + pid(pidFile) + " had still not exited"));
    long pid = pid(pidFile);
    assertThat(Path.of("/proc/" + pid)).as("the killed tool, waiting in the kernel").exists();

    List<UnreapedTool> unreaped = ToolRunner.takeUnreaped();
    assertThat(unreaped).extracting(UnreapedTool::pid).containsExactly(pid);
    assertThat(unreaped.getFirst().exited()).isFalse();
    assertThat(unreaped.getFirst().describe()).startsWith("process " + pid + " (sh -c ");
    assertThat(ToolRunner.takeUnreaped()).as("taken once").isEmpty();

    frozen.close();
    unreaped.getFirst().exit().get(30, java.util.concurrent.TimeUnit.SECONDS);
    assertThat(unreaped.getFirst().exited()).isTrue();
    assertThat(Path.of("/proc/" + pid)).as("the tool, once thawed and reaped").doesNotExist();
  }

  private static long pid(Path pidFile) {
    try {
      return Long.parseLong(Files.readString(pidFile).strip());
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }
}
