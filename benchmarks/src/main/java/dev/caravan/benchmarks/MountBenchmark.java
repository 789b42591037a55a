package dev.caravan.benchmarks;

import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * A bind mount plus its unmount: the core of every NodePublish/NodeUnpublish. Through host-storage
 * this is mount(2) and umount2(2) plus one mountinfo read each (the idempotency check); the
 * shell-out path other drivers take is two process starts, of {@code mount --bind} and {@code
 * umount}, each of which loads libmount and reads the mount table itself.
 *
 * <p>Both sides run the same operations on the same directories, so each invocation leaves the
 * target unmounted for the next one.
 */
@State(Scope.Benchmark)
public class MountBenchmark extends ShellOutComparison {

  private Path dir;
  private Path source;
  private Path target;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    Requirements.requireRoot();
    Requirements.requireBinary("mount");
    Requirements.requireBinary("umount");
    dir = Files.createTempDirectory("caravan-bench-mount");
    source = Files.createDirectory(dir.resolve("source"));
    target = Files.createDirectory(dir.resolve("target"));
    Files.writeString(source.resolve("marker"), "bound");
    // Measure the real thing, not an error path: each side must really bind and really unmount.
    hostStorage();
    mountBinary();
    Mounts.bind(source, target, false);
    check(Files.exists(target.resolve("marker")), "host-storage bind does not show the source");
    Mounts.unmount(target);
    ToolRunner.run(
        List.of("mount", "--bind", source.toString(), target.toString()), TOOL_TIMEOUT);
    check(Files.exists(target.resolve("marker")), "mount --bind does not show the source");
    ToolRunner.run(List.of("umount", target.toString()), TOOL_TIMEOUT);
    check(!MountTable.isMountPoint(target), "target still mounted after the checks");
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    // An invocation that failed between bind and unmount leaves a mount (possibly stacked ones).
    for (int i = 0; i < 100 && Mounts.unmount(target); i++) {
      // unmount the next one down
    }
    Files.delete(target);
    Files.delete(source.resolve("marker"));
    Files.delete(source);
    Files.delete(dir);
  }

  @Benchmark
  public boolean hostStorage() {
    Mounts.bind(source, target, false);
    return Mounts.unmount(target);
  }

  @Benchmark
  public Object mountBinary() {
    ToolRunner.run(
        List.of("mount", "--bind", source.toString(), target.toString()), TOOL_TIMEOUT);
    return ToolRunner.run(List.of("umount", target.toString()), TOOL_TIMEOUT);
  }

  private static void check(boolean condition, String problem) {
    if (!condition) {
      throw new IllegalStateException(problem);
    }
  }
}
