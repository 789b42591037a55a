package dev.caravan.csi.backend.local;

import static dev.caravan.csi.backend.local.LocalGuest.NODE;
import static dev.caravan.csi.backend.local.LocalGuest.POOL;
import static dev.caravan.csi.backend.local.LocalGuest.block;
import static dev.caravan.csi.backend.local.LocalGuest.bytes;
import static dev.caravan.csi.backend.local.LocalGuest.run;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.service.IdentityService;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.GetCapacityRequest;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.Snapshot;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeContentSource;
import dev.caravan.storage.testing.HostRequirements;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Several clients at once against one plugin, the way a conformance client's parallel runs reach
 * it: gRPC on Netty's epoll event loops, handlers on virtual threads, each making ZFS calls through
 * FFM at the same time (ioctls with their own buffers, libzfs_core, send/receive with a helper
 * thread). Every call must succeed and everything created must be gone at the end; the JVM must
 * live (scripts/guest-stress repeats this with -Xcheck:jni and keeps any crash log). Real OpenZFS:
 * runs in the guest of {@code scripts/guest-test}; skipped elsewhere.
 *
 * <p>The guest suite runs one round per client, to stay short; for a longer run by hand, more rounds:
 * {@code CARAVAN_GUEST_JAVA_OPTS=-Dcaravan.concurrency.rounds=5 scripts/guest-suite --select-class ...}.
 */
class LocalConcurrencyGuestTest {
  private static final long MIB = 1L << 20;
  private static final int CLIENTS = Integer.getInteger("caravan.concurrency.clients", 4);
  private static final int ROUNDS = Integer.getInteger("caravan.concurrency.rounds", 1);
  private static final String PARENT = "cp-" + Long.toString(System.nanoTime() % 1_000_000_000L, 36);

  private Path work;
  private Plugin plugin;

  @AfterAll
  static void removeRunDataset() {
    if (HostRequirements.hasZfs()
        && !run("zfs", "list", "-H", "-o", "name", POOL + "/" + PARENT).isEmpty()) {
      run("zfs", "destroy", "-r", POOL + "/" + PARENT);
    }
  }

  // Per test rather than in @BeforeAll, so that elsewhere each test is reported skipped, with the reason.
  @BeforeEach
  void setUp() throws IOException {
    HostRequirements.assumeZfs();
    work = Files.createTempDirectory("caravan-local-concurrency-");
    Path data = work.resolve("data");
    plugin = Plugin.start(new Plugin.Settings("local", work.resolve("csi.sock"), NODE, data, data.resolve("node"),
        IdentityService.defaultName("local"), 0,
        Map.of("pools", POOL, "parent-dataset", PARENT, "device-wait-seconds", "60")));
  }

  @AfterEach
  void tearDown() throws IOException {
    if (work == null) {
      return; // skipped before anything was made
    }
    if (plugin != null) {
      plugin.shutdown(Duration.ofSeconds(5));
    }
    try (Stream<Path> paths = Files.walk(work)) {
      for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  @Test
  void clientsInParallelCreateSnapshotCloneAndDeleteWhileOthersRead() throws Exception {
    List<Future<Integer>> clients = new ArrayList<>();
    CountDownLatch writersDone = new CountDownLatch(CLIENTS);
    try (ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
      for (int c = 0; c < CLIENTS; c++) {
        int client = c;
        clients.add(pool.submit(() -> {
          try {
            return client(client);
          } finally {
            writersDone.countDown();
          }
        }));
      }
      // A reader that never writes: the calls a CO's health checks make all the time.
      Future<Integer> reader = pool.submit(() -> reader(writersDone));
      int calls = 0;
      for (Future<Integer> f : clients) {
        calls += f.get(30, TimeUnit.MINUTES);
      }
      assertThat(calls).isEqualTo(CLIENTS * ROUNDS * 10);
      assertThat(reader.get(1, TimeUnit.MINUTES)).as("the reader's calls while the clients ran").isPositive();
    }
    assertThat(run("zfs", "list", "-H", "-o", "name", "-r", "-t", "all", POOL + "/" + PARENT).lines().toList())
        .as("everything the clients made is gone").containsExactly(POOL + "/" + PARENT);
  }

  /** One client's rounds of create, snapshot, clone from both, list, delete; returns its call count. */
  private int client(int client) {
    UnixChannel channel = new UnixChannel(work.resolve("csi.sock"));
    try {
      ControllerGrpc.ControllerBlockingStub controller = ControllerGrpc.newBlockingStub(channel.channel());
      int calls = 0;
      for (int round = 0; round < ROUNDS; round++) {
        String name = "par-" + client + "-" + round;
        Volume v = controller.createVolume(CreateVolumeRequest.newBuilder().setName(name)
            .addVolumeCapabilities(block()).setCapacityRange(bytes(16 * MIB))
            .putParameters("sparse", client % 2 == 0 ? "true" : "false").build()).getVolume();
        Snapshot s = controller.createSnapshot(CreateSnapshotRequest.newBuilder().setName(name + "-snap")
            .setSourceVolumeId(v.getVolumeId()).build()).getSnapshot();
        Volume fromSnapshot = controller.createVolume(CreateVolumeRequest.newBuilder().setName(name + "-s")
            .addVolumeCapabilities(block()).setCapacityRange(bytes(32 * MIB))
            .setVolumeContentSource(VolumeContentSource.newBuilder()
                .setSnapshot(VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(s.getSnapshotId())))
            .build()).getVolume();
        Volume fromVolume = controller.createVolume(CreateVolumeRequest.newBuilder().setName(name + "-v")
            .addVolumeCapabilities(block()).setCapacityRange(bytes(16 * MIB))
            .setVolumeContentSource(VolumeContentSource.newBuilder()
                .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(v.getVolumeId())))
            .build()).getVolume();
        assertThat(controller.listSnapshots(ListSnapshotsRequest.newBuilder().setSourceVolumeId(v.getVolumeId())
            .build()).getEntriesList()).extracting(e -> e.getSnapshot().getSnapshotId())
            .containsExactly(s.getSnapshotId());
        assertThat(controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
            .extracting(e -> e.getVolume().getVolumeId())
            .contains(v.getVolumeId(), fromSnapshot.getVolumeId(), fromVolume.getVolumeId());
        controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(s.getSnapshotId()).build());
        for (Volume gone : List.of(fromVolume, fromSnapshot, v)) {
          controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(gone.getVolumeId()).build());
        }
        calls += 10;
      }
      return calls;
    } finally {
      channel.close();
    }
  }

  /** Probe, GetCapacity and ListVolumes in a loop until the writers are done; returns its call count. */
  private int reader(CountDownLatch writersDone) throws InterruptedException {
    UnixChannel channel = new UnixChannel(work.resolve("csi.sock"));
    try {
      IdentityGrpc.IdentityBlockingStub identity = IdentityGrpc.newBlockingStub(channel.channel());
      ControllerGrpc.ControllerBlockingStub controller = ControllerGrpc.newBlockingStub(channel.channel());
      int calls = 0;
      do {
        assertThat(identity.probe(ProbeRequest.getDefaultInstance()).getReady().getValue()).isTrue();
        assertThat(controller.getCapacity(GetCapacityRequest.getDefaultInstance()).getAvailableCapacity())
            .isPositive();
        controller.listVolumes(ListVolumesRequest.getDefaultInstance());
        calls += 3;
      } while (!writersDone.await(50, TimeUnit.MILLISECONDS));
      return calls;
    } finally {
      channel.close();
    }
  }
}
