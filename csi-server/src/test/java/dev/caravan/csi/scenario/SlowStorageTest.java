package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.Frozen;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.testing.HostRequirements;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Storage calls that block in the kernel must not starve the others: CreateVolume calls stuck in
 * native writes to a frozen data directory (what a ZFS create waiting for a txg sync, or a stalled
 * disk, looks like to the JVM) while Probe and another volume's publish must still be answered.
 * More creates are sent than this machine has cores, so a server whose handlers pin their carrier
 * threads would leave none for Probe.
 */
class SlowStorageTest {
  private static final int SLOW_CREATES = 2 * Runtime.getRuntime().availableProcessors() + 2;
  private static final VolumeCapability CAP = Caps.mount("ext4");

  private PluginFixture f;
  private ExecutorService clients;

  @AfterEach
  void tearDown() throws IOException, InterruptedException {
    if (clients != null) {
      clients.shutdownNow();
      clients.awaitTermination(30, TimeUnit.SECONDS);
    }
    if (f != null) {
      f.close();
    }
  }

  @Test
  void probeAndAnotherVolumesPublishAnswerWhileCreatesAreBlockedInTheKernel() throws Exception {
    HostRequirements.assumeLoopAndExt4();
    f = PluginFixture.unstarted();
    // The plugin's data directory is a filesystem of its own, so that it can be frozen.
    f.dataOnAFilesystemOfItsOwn();
    f.startPlugin();

    String other = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("other")
        .addVolumeCapabilities(CAP).setCapacityRange(Caps.bytes(64 * MIB)).build()).getVolume().getVolumeId();
    Path staging = f.dir("staging/default/" + other + "/rw");
    Path target = f.dir("per-alloc/a1/" + other).resolve("rw");
    f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(other)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(CAP).build());

    clients = Executors.newFixedThreadPool(SLOW_CREATES);
    List<Future<?>> creates = new ArrayList<>();
    try (Frozen frozen = Filesystems.freeze(f.data)) {
      for (int i = 0; i < SLOW_CREATES; i++) {
        String name = "slow-" + i;
        creates.add(clients.submit(() -> f.controller.withDeadlineAfter(120, TimeUnit.SECONDS)
            .createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(CAP)
                .setCapacityRange(Caps.bytes(64 * MIB)).build())));
      }
      // Let the creates reach the kernel, where they stay until the thaw.
      Thread.sleep(1_000);

      assertThat(f.identity.withDeadlineAfter(20, TimeUnit.SECONDS).probe(ProbeRequest.getDefaultInstance())
          .getReady().getValue()).isTrue();
      f.node.withDeadlineAfter(20, TimeUnit.SECONDS).nodePublishVolume(NodePublishVolumeRequest.newBuilder()
          .setVolumeId(other).setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
          .setVolumeCapability(CAP).build());
      assertThat(MountTable.isMountPoint(target)).isTrue();
      assertThat(creates).as("creates blocked by the frozen data directory").noneMatch(Future::isDone);
    }
    for (Future<?> create : creates) {
      create.get(120, TimeUnit.SECONDS);
    }

    f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(other)
        .setTargetPath(target.toString()).build());
    f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(other)
        .setStagingTargetPath(staging.toString()).build());
  }
}
