package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeContentSource;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A clone of a volume that is in use on this node, on the file backend, is a copy of the volume at one
 * instant or it is refused: never a copy torn by the writes made while it runs, answered OK. The data
 * directory is an ext4 filesystem of its own, so the data directory cannot make reflinks.
 */
class FileCloneOfLiveVolumeTest {
  private static final VolumeCapability MOUNT = Caps.mount("ext4");
  private static final VolumeCapability BLOCK = Caps.block();

  private PluginFixture f;

  @AfterEach
  void stop() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  private void start() throws IOException {
    f = PluginFixture.unstarted(TestBackend.file());
    f.dataOnAFilesystemOfItsOwn();
    f.startPlugin();
  }

  /**
   * The source is published and an application keeps appending records to it without fsyncing; the
   * clone holds every record written before the call (the freeze flushed them), all intact.
   */
  @Test
  void aCloneOfAMountedVolumeHoldsEveryWriteMadeBeforeTheCall() throws Exception {
    start();
    String source = create("live", MOUNT, null);
    Path staging = f.dir("staging/live");
    Path target = f.dir("per-alloc/a1/live").resolve("rw");
    f.stage(source, staging, MOUNT);
    f.publish(source, staging, target, MOUNT);

    long before;
    long after;
    Volume clone;
    try (RecordLog.Writer writer = RecordLog.startUnsynced(target.resolve("records"), 1)) {
      writer.awaitDurable(200, Duration.ofSeconds(30));
      before = writer.written();
      clone = f.controller.createVolume(cloneOf("live-copy", source, MOUNT)).getVolume();
      after = writer.written();
      writer.awaitDurable(after + 50, Duration.ofSeconds(30)); // thawed: the application writes on
      writer.stop();
    }

    Path copyStaging = f.dir("staging/live-copy");
    Path copyTarget = f.dir("per-alloc/a2/live-copy").resolve("rw");
    f.stage(clone.getVolumeId(), copyStaging, MOUNT);
    f.publish(clone.getVolumeId(), copyStaging, copyTarget, MOUNT);
    RecordLog.Contents copied = RecordLog.read(copyTarget.resolve("records"));
    assertThat(copied.records()).as("records in the clone; %d were written before the call, %d when it answered",
        before, after).isBetween(before, after);
    assertThat(copied.trailingBytes()).as("bytes after the last intact record: a torn record").isZero();

    f.unpublish(clone.getVolumeId(), copyTarget);
    f.unstage(clone.getVolumeId(), copyStaging);
    f.unpublish(source, target);
    f.unstage(source, staging);
    delete(clone.getVolumeId());
    delete(source);
  }

  /**
   * Staged for block access nothing can be frozen and this data directory cannot make reflinks: the
   * clone is refused, as a snapshot would be, and leaves nothing behind. Once released it is copied.
   */
  @Test
  void aCloneOfAVolumeInUseWithoutAFilesystemIsRefusedWithoutReflinks() throws Exception {
    start();
    String source = create("raw", BLOCK, 32 * MIB);
    Path staging = f.dir("staging/raw");
    Path target = f.dir("per-alloc/a1/raw").resolve("block");
    f.stage(source, staging, BLOCK);
    f.publish(source, staging, target, BLOCK);
    RecordLog.appendDurably(target, 0, 100, 1);
    Set<String> objects = f.storageObjects();

    StatusRuntimeException refused = error(() -> f.controller.createVolume(cloneOf("raw-copy", source, BLOCK)));
    assertThat(refused.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
    assertThat(refused.getStatus().getDescription())
        .contains("volume_content_source.volume.volume_id " + source)
        .contains("published at [" + target + "]")
        .contains("cannot make reflinks")
        .contains("NodeUnpublishVolume, NodeUnstageVolume");
    assertThat(f.storageObjects()).as("storage objects after the refusal").isEqualTo(objects);
    assertThat(f.controller.listVolumes(ListVolumesRequest.getDefaultInstance()).getEntriesList())
        .extracting(e -> e.getVolume().getVolumeId()).containsExactly(source);

    f.unpublish(source, target);
    f.unstage(source, staging);
    Volume clone = f.controller.createVolume(cloneOf("raw-copy", source, BLOCK)).getVolume();
    Path copyStaging = f.dir("staging/raw-copy");
    Path copyTarget = f.dir("per-alloc/a2/raw-copy").resolve("block");
    f.stage(clone.getVolumeId(), copyStaging, BLOCK);
    f.publish(clone.getVolumeId(), copyStaging, copyTarget, BLOCK);
    assertThat(RecordLog.readPrefix(copyTarget, 100 * RecordLog.RECORD).records()).isEqualTo(100);
    f.unpublish(clone.getVolumeId(), copyTarget);
    f.unstage(clone.getVolumeId(), copyStaging);
    delete(clone.getVolumeId());
    delete(source);
  }

  private String create(String name, VolumeCapability cap, Long bytes) {
    CreateVolumeRequest.Builder req = CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(bytes == null ? 64 * MIB : bytes));
    return f.controller.createVolume(req.build()).getVolume().getVolumeId();
  }

  private static CreateVolumeRequest cloneOf(String name, String source, VolumeCapability cap) {
    return CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(cap)
        .setVolumeContentSource(VolumeContentSource.newBuilder()
            .setVolume(VolumeContentSource.VolumeSource.newBuilder().setVolumeId(source)))
        .build();
  }

  private void delete(String id) {
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
  }
}
