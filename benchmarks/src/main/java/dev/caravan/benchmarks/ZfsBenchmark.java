package dev.caravan.benchmarks;

import dev.caravan.storage.exec.ToolRunner;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.zfs.Zfs;
import dev.caravan.storage.zfs.ZvolSpec;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Volume create, snapshot and destroy through host-storage's {@link Zfs} facade (libzfs_core and
 * ioctls on {@code /dev/zfs}, in process) against the same operations through the {@code zfs}
 * binary, started by host-storage's {@link ToolRunner}, as a driver that shells out does.
 *
 * <p>Needs real ZFS: run it in the guest ({@code scripts/guest-test run -- ...}), which sets {@code
 * CARAVAN_TEST_POOL}. Without {@code /dev/zfs}, the {@code zfs} binary or that variable, the trial
 * fails at once with a message naming what is missing. Everything happens under {@code
 * $CARAVAN_TEST_POOL/bench-<random>}, created per fork with {@code volmode=none} (inherited by
 * every volume either side creates, so no {@code /dev/zd*} device and no udev work, which is not
 * what is compared) and the ownership marker; at the end everything under it is destroyed leaf by
 * leaf, then the root itself.
 *
 * <p>Both sides create the same thing: a thick 64 MiB volume carrying {@code caravan:managed=true}
 * (the CLI gets {@code -o caravan:managed=true}; the facade sets it itself), and snapshots carrying
 * the marker. The facade's destroy also checks the marker, children and snapshots before destroying
 * (extra ioctls); the CLI side is a plain {@code zfs destroy}.
 *
 * <p>Each operation is timed on its own, with the other half of its pair in a {@code
 * Level.Invocation} setup or teardown: JMH warns that such fixtures distort sub-millisecond
 * measurements (their timestamps and cache effects leak in), but these operations take
 * milliseconds, each waiting for a ZFS transaction group to sync.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 3)
@Measurement(iterations = 3, time = 5)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class ZfsBenchmark {
  private static final Duration TOOL_TIMEOUT = Duration.ofSeconds(60);
  private static final long SIZE = 64L << 20;
  private static final String SIZE_CLI = "64M";
  private static final String MARKER = "caravan:managed=true";

  private Zfs zfs;
  private String root;
  private String base; // the volume every snapshot is taken of
  private long counter;

  @Setup(Level.Trial)
  public void setUp() {
    // It creates and destroys datasets, only under $CARAVAN_TEST_POOL/bench-*: scripts/guest-test run --
    // java -jar benchmarks/target/benchmarks.jar Zfs runs it in the guest, on the scratch pool.
    Requirements.require("ZfsBenchmark", HostRequirements.whyNoZfs());
    String pool = System.getenv("CARAVAN_TEST_POOL");
    Requirements.requireBinary("zfs");
    byte[] random = new byte[4];
    new SecureRandom().nextBytes(random);
    root = pool + "/bench-" + HexFormat.of().formatHex(random);
    zfs = Zfs.open();
    cli("zfs", "create", "-o", "canmount=off", "-o", "volmode=none", "-o", MARKER, root);
    base = root + "/base";
    zfs.createZvol(ZvolSpec.of(base, SIZE));

    // Measure the real thing on both sides: each must create a managed volume without a device.
    check(createDestroyFacade(), "facade create + destroy");
    createDestroyCli();
    String facadeVolume = next();
    zfs.createZvol(ZvolSpec.of(facadeVolume, SIZE));
    String cliVolume = next();
    cli("zfs", "create", "-V", SIZE_CLI, "-o", MARKER, cliVolume);
    for (String volume : List.of(facadeVolume, cliVolume)) {
      String got = cli("zfs", "get", "-H", "-o", "value", "volmode,caravan:managed,refreservation",
          volume);
      check(got.startsWith("none\ntrue\n") && !got.contains("\nnone"),
          volume + " is not volmode=none, managed and thick: " + got.replace('\n', ' '));
      check(zfs.destroy(volume), volume + " was not there to destroy");
    }
    check(snapshotDestroyFacade(), "facade snapshot + destroy");
    snapshotDestroyCli();
    check(zfs.snapshots(base).isEmpty(), "snapshots left on " + base);
  }

  /** Everything under the root, leaf by leaf (snapshots, then volumes), then the root. */
  @TearDown(Level.Trial)
  public void tearDown() {
    if (zfs == null) {
      return;
    }
    try {
      if (root != null && zfs.exists(root)) {
        for (String child : zfs.children(root)) {
          for (String snapshot : zfs.snapshots(child)) {
            zfs.destroySnapshot(snapshot);
          }
          zfs.destroy(child);
        }
        zfs.destroy(root);
      }
    } finally {
      zfs.close();
    }
  }

  String next() {
    return root + "/v" + counter++;
  }

  // ------------------------------------------------------------------------------------------
  // Pairs: the set-up's check that each side really does the work (not benchmarks: the single
  // operations below add up to them, and the guest has time for one set of trials only)

  boolean createDestroyFacade() {
    String volume = next();
    zfs.createZvol(ZvolSpec.of(volume, SIZE));
    return zfs.destroy(volume);
  }

  String createDestroyCli() {
    String volume = next();
    cli("zfs", "create", "-V", SIZE_CLI, "-o", MARKER, volume);
    return cli("zfs", "destroy", volume);
  }

  boolean snapshotDestroyFacade() {
    String snapshot = zfs.snapshot(base, "s" + counter++);
    return zfs.destroySnapshot(snapshot);
  }

  String snapshotDestroyCli() {
    String snapshot = base + "@s" + counter++;
    cli("zfs", "snapshot", "-o", MARKER, snapshot);
    return cli("zfs", "destroy", snapshot);
  }

  // ------------------------------------------------------------------------------------------
  // Single operations: the other half is an untimed per-invocation fixture

  /** A name no volume has yet; whatever the benchmark created under it is destroyed after. */
  @State(Scope.Thread)
  public static class NewVolume {
    String name;

    @Setup(Level.Invocation)
    public void name(ZfsBenchmark bench) {
      name = bench.next();
    }

    @TearDown(Level.Invocation)
    public void destroy(ZfsBenchmark bench) {
      bench.zfs.destroy(name);
    }
  }

  /** A freshly created managed volume (created through the facade for both sides). */
  @State(Scope.Thread)
  public static class ExistingVolume {
    String name;

    @Setup(Level.Invocation)
    public void create(ZfsBenchmark bench) {
      name = bench.next();
      bench.zfs.createZvol(ZvolSpec.of(name, SIZE));
    }

    @TearDown(Level.Invocation)
    public void destroyLeftover(ZfsBenchmark bench) {
      bench.zfs.destroy(name); // false, nothing to do, when the benchmark destroyed it
    }
  }

  /** A snapshot name not taken yet on the base volume; destroyed after. */
  @State(Scope.Thread)
  public static class NewSnapshot {
    String name;

    @Setup(Level.Invocation)
    public void name(ZfsBenchmark bench) {
      name = "s" + bench.counter++;
    }

    @TearDown(Level.Invocation)
    public void destroy(ZfsBenchmark bench) {
      bench.zfs.destroySnapshot(bench.base + "@" + name);
    }
  }

  /** A freshly taken managed snapshot of the base volume (through the facade for both sides). */
  @State(Scope.Thread)
  public static class ExistingSnapshot {
    String name;

    @Setup(Level.Invocation)
    public void create(ZfsBenchmark bench) {
      name = bench.zfs.snapshot(bench.base, "s" + bench.counter++);
    }

    @TearDown(Level.Invocation)
    public void destroyLeftover(ZfsBenchmark bench) {
      bench.zfs.destroySnapshot(name);
    }
  }

  @Benchmark
  public String createFacade(NewVolume volume) {
    zfs.createZvol(ZvolSpec.of(volume.name, SIZE));
    return volume.name;
  }

  @Benchmark
  public String createCli(NewVolume volume) {
    return cli("zfs", "create", "-V", SIZE_CLI, "-o", MARKER, volume.name);
  }

  @Benchmark
  public boolean destroyFacade(ExistingVolume volume) {
    return zfs.destroy(volume.name);
  }

  @Benchmark
  public String destroyCli(ExistingVolume volume) {
    return cli("zfs", "destroy", volume.name);
  }

  @Benchmark
  public String snapshotFacade(NewSnapshot snapshot) {
    return zfs.snapshot(base, snapshot.name);
  }

  @Benchmark
  public String snapshotCli(NewSnapshot snapshot) {
    return cli("zfs", "snapshot", "-o", MARKER, base + "@" + snapshot.name);
  }

  @Benchmark
  public boolean destroySnapshotFacade(ExistingSnapshot snapshot) {
    return zfs.destroySnapshot(snapshot.name);
  }

  @Benchmark
  public String destroySnapshotCli(ExistingSnapshot snapshot) {
    return cli("zfs", "destroy", snapshot.name);
  }

  private static String cli(String... command) {
    return ToolRunner.run(List.of(command), TOOL_TIMEOUT).stdout();
  }

  private static void check(boolean condition, String problem) {
    if (!condition) {
      throw new IllegalStateException(problem);
    }
  }
}
