package dev.caravan.benchmarks;

import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.block.Signature;
import dev.caravan.storage.exec.ToolResult;
import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.file.SparseFiles;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FsType;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.StandardOpenOption;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * "What is on this device?": asked before every format, so on every first stage. libblkid in
 * process (host-storage's {@link Probe}) against the {@code blkid} binary, both low-level probing
 * ({@code blkid -p}: superblocks and partition tables, no cache) the same ext4 loop device.
 */
@State(Scope.Benchmark)
public class ProbeBenchmark extends ShellOutComparison {
  private static final long SIZE = 64L << 20;

  /**
   * {@code false}: nothing else holds the device open, so the kernel drops its page cache at each
   * probe's last close and every probe reads the device again, as the first probe of a freshly
   * attached volume does. {@code true}: the benchmark holds it open, the superblocks stay cached,
   * and what is left is the cost of probing itself.
   */
  @Param({"false", "true"})
  public boolean cached;

  private Path dir;
  private Path file;
  private LoopDevice loop;
  private FileChannel holder;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    Requirements.requireRoot();
    Requirements.requireLoopControl();
    Requirements.requireBinary("blkid");
    dir = Files.createTempDirectory("caravan-bench-probe");
    file = dir.resolve("disk.img");
    SparseFiles.create(file, SIZE);
    loop = LoopDevices.attach(file, false);
    Filesystems.formatIfEmpty(loop.device(), FsType.EXT4, List.of("-q"));
    if (cached) {
      holder = FileChannel.open(loop.device(), StandardOpenOption.READ);
    }
    // Both sides must find the same filesystem, or we would be timing different work.
    Signature direct = libblkid();
    String exported = blkidBinary().stdout();
    if (!direct.type().equals(Optional.of("ext4"))
        || !exported.contains("TYPE=ext4")
        || !exported.contains("UUID=" + direct.uuid().orElseThrow())) {
      throw new IllegalStateException(
          "libblkid and blkid disagree: " + direct + " vs " + exported.strip());
    }
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    try {
      if (holder != null) {
        holder.close();
      }
      if (loop != null) {
        LoopDevices.detach(loop);
      }
    } finally {
      Files.deleteIfExists(file);
      Files.delete(dir);
    }
  }

  @Benchmark
  public Signature libblkid() {
    return Probe.probe(loop.device());
  }

  @Benchmark
  public ToolResult blkidBinary() {
    return ToolRunner.run(
        List.of("blkid", "-p", "-o", "export", loop.device().toString()), TOOL_TIMEOUT);
  }
}
