package dev.caravan.csi.scenario;

import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.observe.inspect.Chain;
import dev.caravan.csi.observe.inspect.Finding;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * "In use" as DeleteVolume decides it, on one backend, over a real unix socket: a volume published
 * for block access is a bind of its device node at the target, which no filesystem mount of the
 * device shows. DeleteVolume refuses it from what the kernel shows (naming the bind) whether the node
 * journal still records it, cannot read its record, or has lost the record altogether.
 */
abstract class InUseConformance {
  PluginFixture f;

  abstract TestBackend backend();

  @BeforeEach
  void start() throws IOException {
    f = PluginFixture.start(backend());
  }

  @AfterEach
  void stop() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  private StatusRuntimeException deleteRefused(String id) {
    StatusRuntimeException e = error(() -> f.controller.deleteVolume(DeleteVolumeRequest.newBuilder()
        .setVolumeId(id).build()));
    assertThat(e.getStatus().getCode()).as("DeleteVolume of a volume in use: %s", e).isEqualTo(Code.FAILED_PRECONDITION);
    return e;
  }

  /** The journal's record files of the plugin's journal directory. */
  private List<Path> records() throws IOException {
    try (Stream<Path> files = Files.list(f.settings().journalDir())) {
      return files.filter(p -> p.getFileName().toString().endsWith(".staged")).toList();
    }
  }

  @Test
  void aBlockPublishIsInUseWithTheJournalIntactUnreadableOrGone() throws Exception {
    VolumeCapability cap = Caps.block();
    Volume v = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("bound").addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(f.backend.scaled(16 * Caps.MIB))).build()).getVolume();
    String id = v.getVolumeId();
    Path staging = f.dir("staging/default/bound/rw-block-device-single-node-writer");
    Path target = f.dir("per-alloc/a1/bound").resolve("rw-block-device-single-node-writer");
    f.node.nodeStageVolume(dev.caravan.csi.v1.NodeStageVolumeRequest.newBuilder().setVolumeId(id)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(cap).putAllVolumeContext(v.getVolumeContextMap())
        .build());
    f.publish(id, staging, target, cap);
    assertThat(MountTable.isMountPoint(target)).as("the device node bound at %s", target).isTrue();

    // The journal intact: refused, naming the bind the kernel shows.
    assertThat(deleteRefused(id).getStatus().getDescription()).contains("bound at " + target);

    // The record unreadable: kept, refused naming the record and the bind; caravan inspect says why.
    List<Path> written = records();
    assertThat(written).hasSize(1);
    Path record = written.getFirst();
    f.stopPlugin();
    Files.writeString(record, "volumeId=" + id + "\naccessType=SIDEWAYS\n", StandardCharsets.UTF_8);
    f.startPlugin();
    String unreadable = deleteRefused(id).getStatus().getDescription();
    assertThat(unreadable).contains(record.toString()).contains("bound at " + target);
    assertThat(record).exists();
    Chain chain = f.plugin().observability().inspector().inspect(id);
    assertThat(chain.findings()).filteredOn(x -> x.code().equals("journal-record-unreadable"))
        .singleElement().extracting(Finding::message).asString().contains(record.toString());

    // The record gone (behind the plugin's back): the kernel alone still refuses.
    f.stopPlugin();
    Files.delete(record);
    f.startPlugin();
    assertThat(deleteRefused(id).getStatus().getDescription()).contains("bound at " + target);

    // Undone by hand, as an operator would: then it is deleted.
    Mounts.unmount(target);
    Files.delete(target);
    for (LoopDevice l : f.ourLoops()) {
      LoopDevices.detach(l);
    }
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    assertThat(f.storageObjects()).isEmpty();
  }
}
