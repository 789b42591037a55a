package dev.caravan.csi.scenario;

import dev.caravan.csi.testing.GuestCommands;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;

/**
 * A ZFS pool of its own whose disk a test stalls or fails: a device-mapper device over a loop
 * device over a sparse file, its table switched with {@code dmsetup} (zinject is in Debian's
 * zfs-test package, which the guest does not have). The shared test pool is never touched. {@code
 * failmode=wait}, ZFS's default: when writes fail the pool suspends its I/O, and everything that
 * writes to it waits until {@code zpool clear}.
 *
 * <p>Commands run with a bound ({@link GuestCommands#run(Duration, String...)}): a command that waits
 * on a stuck pool must fail the test, not hang it.
 */
final class FaultyPool implements AutoCloseable {
  private static final Duration COMMAND_BOUND = Duration.ofSeconds(60);

  final String name;
  private final Path file;
  private final String loop;
  private final String linear;

  private FaultyPool(String name, Path file, String loop, String linear) {
    this.name = name;
    this.file = file;
    this.loop = loop;
    this.linear = linear;
  }

  /** A new pool of {@code bytes} on a sparse file. */
  static FaultyPool create(long bytes) throws IOException {
    String name = "cvstall" + Long.toString(ProcessHandle.current().pid(), 36);
    Path file = Files.createTempFile(name + "-", ".disk");
    try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
      f.setLength(bytes);
    }
    String loop = run("losetup", "--find", "--show", file.toString());
    String linear = "0 " + (bytes >> 9) + " linear " + loop + " 0";
    try {
      run("dmsetup", "create", name, "--table", linear);
      try {
        run("zpool", "create", "-f", "-o", "failmode=wait", "-o", "cachefile=none", "-O", "mountpoint=none", name,
            "/dev/mapper/" + name);
      } catch (AssertionError e) {
        run("dmsetup", "remove", name);
        throw e;
      }
    } catch (AssertionError e) {
      run("losetup", "--detach", loop);
      Files.deleteIfExists(file);
      throw e;
    }
    return new FaultyPool(name, file, loop, linear);
  }

  /** The disk stops answering: every I/O waits in device-mapper, so transaction groups stall. */
  void stall() {
    run("dmsetup", "suspend", name);
  }

  /**
   * While the disk is stalled: a {@code zpool reguid} of this pool, which waits for its transaction
   * group while it holds ZFS's one lock over the pools' namespace, so that every read of any pool's
   * status ({@code ZFS_IOC_POOL_STATS}, {@code zpool list}) waits behind it until the disk is back.
   * The future ends with the command.
   */
  CompletableFuture<String> holdNamespaceLock() {
    return CompletableFuture.supplyAsync(() -> run("zpool", "reguid", name),
        Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon(true).factory()));
  }

  /** Every write to the disk fails (dm-flakey, reads still work): the next transaction group suspends the pool. */
  void failWrites() {
    run("dmsetup", "load", name, "--table", linear.replace(" linear ", " flakey ") + " 0 1 1 error_writes");
    run("dmsetup", "resume", name);
  }

  /** Waits until {@code zpool list} reports the pool's health as {@code health}. */
  void awaitHealth(String health, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    String seen = health();
    while (!seen.equals(health)) {
      if (System.nanoTime() > deadline) {
        throw new AssertionError("pool " + name + " is " + seen + ", not " + health + ", after " + timeout);
      }
      Thread.sleep(200);
      seen = health();
    }
  }

  String health() {
    return run("zpool", "list", "-H", "-o", "health", name);
  }

  /** The disk works again, and the pool's suspended I/O resumes. */
  void recover() {
    run("dmsetup", "load", name, "--table", linear);
    run("dmsetup", "resume", name);
    run("zpool", "clear", name);
  }

  @Override
  public void close() throws IOException {
    try {
      recover();
      run("zpool", "destroy", "-f", name);
      run("dmsetup", "remove", name);
      run("losetup", "--detach", loop);
    } finally {
      Files.deleteIfExists(file);
    }
  }

  /** The command's standard output; an AssertionError naming it when it fails or is still running after a minute. */
  private static String run(String... command) {
    return GuestCommands.run(COMMAND_BOUND, command);
  }
}
