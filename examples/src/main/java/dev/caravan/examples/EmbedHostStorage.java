package dev.caravan.examples;

import dev.caravan.storage.HostCapabilities;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.file.SparseFiles;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FormatOutcome;
import dev.caravan.storage.fs.FsStats;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.mount.MountFlag;
import dev.caravan.storage.mount.Mounts;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Random;

/**
 * Embedding host-storage in another JVM program: no gRPC, no CSI, just the library. Creates a
 * sparse file, attaches it to a loop device, formats it if it is empty, mounts it in a temporary
 * directory, writes a file, reads the filesystem's statistics, grows the file, the device and the
 * filesystem online, and then takes everything down again: unmount, detach, delete. Every step is
 * printed. Whatever fails, the undo steps registered so far still run, newest first, so the run
 * leaves no mount, no loop device and no file behind.
 *
 * <p>Needs root (mount(2) and the loop ioctls) and the loop driver; xfs (the default) needs
 * xfsprogs. Usage: {@code EmbedHostStorage [xfs|ext4] [parent-directory]}.
 */
public final class EmbedHostStorage {
  static final long INITIAL_BYTES = 512L << 20; // mkfs.xfs wants at least 300 MB
  static final long GROWN_BYTES = 1L << 30;
  static final long WRITTEN_BYTES = 16L << 20;
  static final String FILE_NAME = "hello.bin";


  /** What a run did, for a caller (or a test) to check. */
  public record Outcome(
      Path workDir,
      Path image,
      Path device,
      FormatOutcome format,
      FsStats afterWrite,
      FsStats afterGrow,
      boolean grown) {}

  private final PrintStream out;
  private final FsType fsType;
  private final Optional<String> failAfter;

  public EmbedHostStorage(PrintStream out, FsType fsType) {
    this(out, fsType, Optional.empty());
  }

  /** {@code failAfter}: a step name after which to throw, to show (and test) the cleanup. */
  EmbedHostStorage(PrintStream out, FsType fsType, Optional<String> failAfter) {
    this.out = out;
    this.fsType = fsType;
    this.failAfter = failAfter;
  }

  public static void main(String[] args) throws IOException {
    FsType type = FsType.XFS;
    Path parent = Path.of(System.getProperty("java.io.tmpdir"));
    if (args.length > 2 || (args.length > 0 && FsType.parse(args[0]).isEmpty())) {
      System.err.println("usage: EmbedHostStorage [xfs|ext4] [parent-directory]");
      System.exit(2);
    }
    if (args.length > 0) {
      type = FsType.parse(args[0]).orElseThrow();
    }
    if (args.length > 1) {
      parent = Path.of(args[1]);
    }
    try {
      new EmbedHostStorage(System.out, type).run(parent);
    } catch (StorageException e) {
      System.out.flush();
      System.err.println("failed: " + e.getMessage());
      e.printStackTrace();
      System.exit(1);
    }
  }

  /** Runs every step in a new directory under {@code parent}, which is gone again afterwards. */
  public Outcome run(Path parent) throws IOException {
    try (Cleanup cleanup = new Cleanup()) {
      Path work = Files.createTempDirectory(parent, "caravan-embed-");
      cleanup.push("delete " + work, () -> delete(work));
      done("workdir", work.toString());

      Path image = work.resolve("volume.img");
      SparseFiles.create(image, INITIAL_BYTES);
      cleanup.push("delete " + image, () -> delete(image));
      done(
          "create",
          "%s: %s, %s allocated"
              .formatted(image, mib(INITIAL_BYTES), mib(SparseFiles.allocatedBytes(image))));

      LoopDevice loop = LoopDevices.attach(image, false);
      cleanup.push("detach " + loop.device(), () -> detach(loop));
      done("attach", "%s -> %s".formatted(loop.device(), loop.backingFile()));

      Path device = loop.device();
      done("probe", Probe.probe(device).describe());

      FormatOutcome format = Filesystems.formatIfEmpty(device, fsType, List.of());
      done(
          "format",
          "%s %s (%s)"
              .formatted(
                  format == FormatOutcome.FORMATTED ? "formatted" : "left alone, already",
                  fsType.id(),
                  Probe.probe(device).uuid().map(uuid -> "UUID " + uuid).orElse("no UUID")));

      Path mountPoint = Files.createDirectory(work.resolve("mnt"));
      cleanup.push("delete " + mountPoint, () -> delete(mountPoint));
      Mounts.mount(
          device, mountPoint, fsType.id(), EnumSet.of(MountFlag.NO_SUID, MountFlag.NO_DEV), null);
      cleanup.push("unmount " + mountPoint, () -> unmount(mountPoint));
      done("mount", "%s on %s type %s".formatted(device, mountPoint, fsType.id()));

      Path file = mountPoint.resolve(FILE_NAME);
      write(file, WRITTEN_BYTES);
      done("write", "%s: %s, fsynced".formatted(file, mib(Files.size(file))));

      FsStats afterWrite = Filesystems.stats(mountPoint);
      done("stats", describe(afterWrite));

      boolean grown = grow(image, loop, mountPoint);
      FsStats afterGrow = Filesystems.stats(mountPoint);
      done("stats", describe(afterGrow));

      return new Outcome(work, image, device, format, afterWrite, afterGrow, grown);
    }
  }

  /**
   * File, then device, then filesystem: the order matters, each sees the size of the one below.
   * Online ext4 growth needs CAP_SYS_RESOURCE, which some sandboxes drop even for root; then the
   * step says so and is skipped rather than failing (xfs needs no such capability).
   */
  private boolean grow(Path image, LoopDevice loop, Path mountPoint) {
    if (fsType == FsType.EXT4 && !HostCapabilities.current().canGrowMountedExt4()) {
      done(
          "grow",
          "skipped: online ext4 growth (resize2fs) needs CAP_SYS_RESOURCE, which this process"
              + " lacks; xfs, the default, grows without it");
      return false;
    }
    SparseFiles.grow(image, GROWN_BYTES);
    LoopDevices.refreshCapacity(loop);
    long deviceBytes = BlockDevices.size(loop.device());
    Filesystems.grow(mountPoint);
    done(
        "grow",
        "%s -> %s (file, %s, filesystem online)"
            .formatted(mib(INITIAL_BYTES), mib(GROWN_BYTES), loop.device() + " " + mib(deviceBytes)));
    return true;
  }

  private void unmount(Path mountPoint) {
    boolean unmounted = Mounts.unmount(mountPoint);
    print("unmount", unmounted ? mountPoint.toString() : mountPoint + " (was not mounted)");
  }

  private void detach(LoopDevice loop) {
    LoopDevices.detach(loop);
    print("detach", loop.device().toString());
  }

  private void delete(Path path) throws IOException {
    if (Files.deleteIfExists(path)) {
      print("delete", path.toString());
    }
  }

  // Random bytes, so no filesystem can store them compressed or deduplicated.
  private static void write(Path file, long bytes) throws IOException {
    Random random = new Random(42);
    ByteBuffer buffer = ByteBuffer.allocate(1 << 20);
    try (FileChannel channel =
        FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      for (long written = 0; written < bytes; written += buffer.capacity()) {
        random.nextBytes(buffer.array());
        buffer.clear();
        while (buffer.hasRemaining()) {
          channel.write(buffer);
        }
      }
      channel.force(true);
    }
  }

  private void done(String step, String detail) {
    print(step, detail);
    if (failAfter.equals(Optional.of(step))) {
      throw new StorageException("failing on purpose after step " + step);
    }
  }

  private void print(String step, String detail) {
    out.printf(Locale.ROOT, "%-9s %s%n", step + ":", detail);
  }

  private static String describe(FsStats s) {
    return "%s total, %s used, %s available; inodes %d total, %d used"
        .formatted(
            mib(s.totalBytes()),
            mib(s.usedBytes()),
            mib(s.availableBytes()),
            s.totalInodes(),
            s.usedInodes());
  }

  private static String mib(long bytes) {
    return String.format(Locale.ROOT, "%.1f MiB", bytes / (double) (1 << 20));
  }
}
