package dev.caravan.csi.backend.local;

import dev.caravan.csi.TestClassPath;

import static dev.caravan.csi.GrpcOutcomes.error;
import static dev.caravan.csi.backend.local.LocalGuest.NODE;
import static dev.caravan.csi.backend.local.LocalGuest.POOL;
import static dev.caravan.csi.backend.local.LocalGuest.block;
import static dev.caravan.csi.backend.local.LocalGuest.bytes;
import static dev.caravan.csi.backend.local.LocalGuest.run;
import static dev.caravan.csi.backend.local.LocalGuest.zfsGet;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.server.CrashPoints;
import dev.caravan.csi.server.CsiServer;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.Snapshot;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeContentSource;
import dev.caravan.storage.zfs.Zfs;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A plugin process killed in the middle of a clone, between the receive and the copy's last step
 * ({@code -Dcaravan.crash-at=clone.after-receive}), and a new process that gets the CO's retry of the
 * same CreateVolume: the retry must answer OK with the source's data, and leave nothing behind (no
 * temporary snapshot, no received snapshot, no extra dataset). Real plugin processes, real OpenZFS:
 * run in the guest of {@code scripts/guest-test}; skipped elsewhere.
 */
class LocalCloneCrashGuestTest {
  private static final long MIB = 1L << 20;
  private static final long SIZE = 32 * MIB;
  private static final String PARENT = "cc-" + Long.toString(System.nanoTime() % 1_000_000_000L, 36);

  private Path work;
  private UnixChannel channel;
  private ControllerGrpc.ControllerBlockingStub controller;
  private final List<Process> processes = new ArrayList<>();

  @AfterAll
  static void removeRunDataset() {
    if ("1".equals(System.getenv("CARAVAN_GUEST")) && Files.exists(Path.of("/dev/zfs"))
        && !run("zfs", "list", "-H", "-o", "name", POOL + "/" + PARENT).isEmpty()) {
      run("zfs", "destroy", "-r", POOL + "/" + PARENT);
    }
  }

  // Per test rather than in @BeforeAll, so that elsewhere each test is reported skipped, with the reason.
  @BeforeEach
  void setUp() throws IOException {
    assumeTrue("1".equals(System.getenv("CARAVAN_GUEST")) && Files.exists(Path.of("/dev/zfs")),
        "needs real ZFS: run scripts/guest-suite (a guest kernel under qemu)");
    work = Files.createTempDirectory("caravan-clone-crash-");
  }

  @AfterEach
  void tearDown() throws IOException, InterruptedException {
    if (work == null) {
      return; // skipped before anything was made
    }
    disconnect();
    for (Process p : processes) {
      p.destroyForcibly();
      p.waitFor(20, TimeUnit.SECONDS);
    }
    try (Stream<Path> paths = Files.walk(work)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  @Test
  void aCloneInterruptedAfterItsReceiveIsFinishedByTheRetry() throws Exception {
    serve();
    Volume source = controller.createVolume(CreateVolumeRequest.newBuilder().setName("crash-src")
        .addVolumeCapabilities(block()).setCapacityRange(bytes(SIZE)).build()).getVolume();
    String sourceDataset = source.getVolumeContextMap().get("dataset");
    byte[] before = new byte[(int) MIB];
    new Random(7).nextBytes(before);
    byte[] after = new byte[(int) MIB];
    new Random(8).nextBytes(after);
    write(sourceDataset, 0, before);
    Snapshot snapshot = controller.createSnapshot(CreateSnapshotRequest.newBuilder().setName("crash-snap")
        .setSourceVolumeId(source.getVolumeId()).build()).getSnapshot();
    write(sourceDataset, SIZE - MIB, after);
    byte[] atSnapshot = read(sourceDataset, SIZE);
    Arrays.fill(atSnapshot, (int) (SIZE - MIB), (int) SIZE, (byte) 0);
    byte[] now = read(sourceDataset, SIZE);

    // From the snapshot, into a larger volume: the process dies after the receive.
    CreateVolumeRequest fromSnapshot = CreateVolumeRequest.newBuilder().setName("crash-from-snap")
        .addVolumeCapabilities(block()).setCapacityRange(bytes(2 * SIZE))
        .setVolumeContentSource(VolumeContentSource.newBuilder()
            .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snapshot.getSnapshotId())))
        .build();
    String snapshotClone = dieDuring(fromSnapshot);
    assertThat(zfsGet("caravan:managed", snapshotClone)).isEqualTo("true");
    assertThat(run("zfs", "get", "-H", "-o", "source", "caravan:managed", snapshotClone)).isEqualTo("received");
    assertThat(snapshotsOf(snapshotClone)).as("the received snapshot").hasSize(1);

    Volume cloneOfSnapshot = retry(fromSnapshot);
    assertThat(cloneOfSnapshot.getCapacityBytes()).isEqualTo(2 * SIZE);
    assertThat(cloneOfSnapshot.getVolumeContextMap()).containsEntry("dataset", snapshotClone);
    assertFinished(snapshotClone);
    assertThat(zfsGet("volsize", snapshotClone)).isEqualTo(Long.toString(2 * SIZE));
    assertSameBytes(read(snapshotClone, SIZE), atSnapshot);

    // From the live volume: the temporary snapshot of the source is left behind too.
    CreateVolumeRequest fromVolume = CreateVolumeRequest.newBuilder().setName("crash-from-vol")
        .addVolumeCapabilities(block()).setCapacityRange(bytes(SIZE))
        .setVolumeContentSource(VolumeContentSource.newBuilder()
            .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(source.getVolumeId())))
        .build();
    String volumeClone = dieDuring(fromVolume);
    assertThat(snapshotsOf(sourceDataset)).as("the temporary snapshot").anyMatch(s -> s.contains("@clone-"));

    Volume cloneOfVolume = retry(fromVolume);
    assertThat(cloneOfVolume.getVolumeContextMap()).containsEntry("dataset", volumeClone);
    assertFinished(volumeClone);
    assertSameBytes(read(volumeClone, SIZE), now);

    // Nothing leaked: the source keeps only the CSI snapshot, no other dataset appeared.
    String id = snapshot.getSnapshotId();
    assertThat(snapshotsOf(sourceDataset)).containsExactly(sourceDataset + id.substring(id.indexOf('@')));
    assertThat(run("zfs", "list", "-H", "-o", "name", "-r", POOL + "/" + PARENT).lines().sorted().toList())
        .containsExactly(POOL + "/" + PARENT, sourceDataset, snapshotClone, volumeClone);
    assertThat(controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
        .extracting(e -> e.getVolume().getVolumeId())
        .containsExactlyInAnyOrder(source.getVolumeId(), cloneOfSnapshot.getVolumeId(), cloneOfVolume.getVolumeId());

    for (Volume v : List.of(cloneOfSnapshot, cloneOfVolume)) {
      controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(v.getVolumeId()).build());
    }
    controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snapshot.getSnapshotId()).build());
    controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(source.getVolumeId()).build());
    assertThat(run("zfs", "list", "-H", "-o", "name", "-r", "-t", "all", POOL + "/" + PARENT).lines().toList())
        .containsExactly(POOL + "/" + PARENT);
  }

  /**
   * Sends {@code request} to a plugin armed to die after the clone's receive, checks that it died
   * there, and returns the dataset the clone was being made in (it exists, unfinished).
   */
  private String dieDuring(CreateVolumeRequest request) throws Exception {
    List<String> before = datasets();
    stop();
    Process armed = serve("-D" + CrashPoints.PROPERTY + "=clone.after-receive");
    error(() -> controller.createVolume(request));
    assertThat(armed.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(armed.exitValue()).isEqualTo(CrashPoints.EXIT_STATUS);
    assertThat(Files.readString(log(armed))).contains("crash point clone.after-receive reached");
    disconnect();
    List<String> added = new ArrayList<>(datasets());
    added.removeAll(before);
    assertThat(added).as("the crash leaves the received dataset").hasSize(1);
    return added.getFirst();
  }

  /** The CO's retry, answered by a new plugin process. */
  private Volume retry(CreateVolumeRequest request) throws Exception {
    stop();
    serve();
    return controller.createVolume(request).getVolume();
  }

  private static void assertFinished(String dataset) {
    assertThat(run("zfs", "get", "-H", "-o", "value,source", "caravan:managed", dataset)).isEqualTo("true\tlocal");
    assertThat(run("zfs", "get", "-H", "-o", "source", "caravan:csi-name", dataset)).isEqualTo("local");
    assertThat(snapshotsOf(dataset)).as("snapshots of %s", dataset).isEmpty();
    assertThat(Long.parseLong(zfsGet("refreservation", dataset))).as("thick")
        .isGreaterThanOrEqualTo(Long.parseLong(zfsGet("volsize", dataset)));
  }

  private List<String> datasets() {
    return run("zfs", "list", "-H", "-o", "name", "-r", POOL + "/" + PARENT).lines().toList();
  }

  private static List<String> snapshotsOf(String dataset) {
    return run("zfs", "list", "-H", "-t", "snapshot", "-o", "name", "-d", "1", dataset).lines().toList();
  }

  private static void write(String dataset, long offset, byte[] data) throws IOException {
    try (FileChannel channel = FileChannel.open(device(dataset), StandardOpenOption.WRITE)) {
      ByteBuffer buffer = ByteBuffer.wrap(data);
      while (buffer.hasRemaining()) {
        channel.write(buffer, offset + buffer.position());
      }
      channel.force(true);
    }
  }

  private static byte[] read(String dataset, long length) throws IOException {
    try (FileChannel channel = FileChannel.open(device(dataset), StandardOpenOption.READ)) {
      ByteBuffer buffer = ByteBuffer.allocate((int) length);
      while (buffer.hasRemaining() && channel.read(buffer, buffer.position()) >= 0) {
        // until full
      }
      return buffer.array();
    }
  }

  private static Path device(String dataset) {
    try (Zfs zfs = Zfs.open()) {
      return zfs.zvolDevice(dataset, Duration.ofSeconds(60));
    }
  }

  /** Compares without AssertJ's element-by-element array comparison (slow in the guest). */
  private static void assertSameBytes(byte[] actual, byte[] expected) {
    assertThat(Arrays.mismatch(actual, expected)).as("first differing byte").isEqualTo(-1);
  }

  private Process serve(String... jvmOptions) throws IOException, InterruptedException {
    Path config = work.resolve("caravan.properties");
    Files.writeString(config, "local.pools=" + POOL + "\nlocal.parent-dataset=" + PARENT
        + "\nlocal.device-wait-seconds=60\n");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Path socket = work.resolve("csi.sock");
    List<String> command = new ArrayList<>(List.of(java, "--enable-native-access=ALL-UNNAMED",
        "-XX:TieredStopAtLevel=1"));
    command.addAll(List.of(jvmOptions));
    command.addAll(List.of("-cp", TestClassPath.of(), "dev.caravan.csi.cli.Main", "serve", "--http-listen=off",
        "--driver=local", "--endpoint", "unix://" + socket, "--node-id", NODE,
        "--data-dir", work.resolve("data").toString(), "--config", config.toString()));
    Path log = work.resolve("plugin-" + processes.size() + ".log");
    Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    processes.add(p);
    // Generous: a JVM under TCG, with other guests' work on the same host cores, can take minutes.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(600);
    while (!CsiServer.isLive(socket)) {
      if (!p.isAlive()) {
        throw new AssertionError("plugin exited " + p.waitFor() + ": " + Files.readString(log));
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("plugin did not come up within 600 s: " + Files.readString(log)
            + "\nits threads:\n" + run("jcmd", Long.toString(p.pid()), "Thread.print"));
      }
      Thread.sleep(100);
    }
    channel = new UnixChannel(socket);
    controller = ControllerGrpc.newBlockingStub(channel.channel());
    return p;
  }

  private Path log(Process p) {
    return work.resolve("plugin-" + processes.indexOf(p) + ".log");
  }

  /** Stops the running plugin, if any, as Nomad would (SIGTERM). */
  private void stop() throws InterruptedException {
    disconnect();
    for (Process p : processes) {
      if (p.isAlive()) {
        p.destroy();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("plugin stops on SIGTERM").isTrue();
      }
    }
  }

  private void disconnect() {
    if (channel != null) {
      channel.close();
      channel = null;
    }
  }
}
