package dev.caravan.csi.scenario;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.support.CrashPoints;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.mount.MountTable;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A plugin killed while a volume's filesystem is frozen for a snapshot leaves it frozen: the next
 * plugin to start thaws it, from the record the freeze left in the data directory, and drops the record.
 */
class FreezeCrashOnFileTest {
  private static final VolumeCapability MOUNT = Caps.mount("ext4");
  private static final String STEP = "copy.while-frozen";

  private PluginFixture f;
  private ForkedPlugin forked;
  private Path staging;

  @AfterEach
  void cleanUp() throws IOException, InterruptedException {
    if (forked != null) {
      forked.close();
    }
    if (staging != null && MountTable.isMountPoint(staging)) {
      Filesystems.thaw(staging); // whatever the test saw, its filesystem must come down
    }
    if (f != null) {
      f.close();
    }
  }

  @Test
  void aFilesystemFrozenByAKilledPluginIsThawedAtTheNextStart() throws Exception {
    f = PluginFixture.unstarted(TestBackend.file());
    f.startPlugin();
    String id = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("frozen").addVolumeCapabilities(MOUNT)
        .setCapacityRange(Caps.bytes(64 * Caps.MIB)).build()).getVolume().getVolumeId();
    staging = f.dir("staging/frozen");
    Path target = f.dir("per-alloc/a1/frozen").resolve("rw");
    f.stage(id, staging, MOUNT);
    f.publish(id, staging, target, MOUNT);
    f.stopPlugin();

    forked = ForkedPlugin.start(f, STEP);
    f.connect();
    CreateSnapshotRequest snapshot = CreateSnapshotRequest.newBuilder().setSourceVolumeId(id).setName("snap").build();
    try {
      f.controller.withDeadlineAfter(120, TimeUnit.SECONDS).createSnapshot(snapshot);
      throw new AssertionError("the plugin answered instead of dying at " + STEP + "\n" + forked.log());
    } catch (StatusRuntimeException e) {
      assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
    }
    OptionalInt exit = forked.exitStatus(60);
    assertThat(exit).as(forked.log()).hasValue(CrashPoints.EXIT_STATUS);
    assertThat(forked.log()).contains("crash point " + STEP + " reached");
    f.disconnect();

    f.startPlugin();
    CompletableFuture<Void> write = CompletableFuture.runAsync(() -> {
      try {
        Files.writeString(target.resolve("after-restart"), "written");
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    });
    write.get(30, TimeUnit.SECONDS); // frozen, it would never finish
    assertThat(freezeRecords()).as("freeze records left in the data directory").isEmpty();

    String snap = f.controller.createSnapshot(snapshot).getSnapshot().getSnapshotId(); // the CO's retry
    f.controller.deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(snap).build());
    f.unpublish(id, target);
    f.unstage(id, staging);
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
  }

  /** Every file in the data directory that is not a volume's or a snapshot's, nor the node journal's. */
  private List<Path> freezeRecords() throws IOException {
    try (Stream<Path> all = Files.walk(f.data)) {
      return all.filter(Files::isRegularFile)
          .filter(p -> !p.startsWith(f.data.resolve("volumes")) && !p.startsWith(f.data.resolve("snapshots"))
              && !p.startsWith(f.data.resolve("node")))
          .toList();
    }
  }
}
