package dev.caravan.csi.scenario;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.ProbeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.testing.HostRequirements;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A node plugin on the file backend, as Nomad runs one, loads none of the code it does not use: a
 * long-lived daemon on every node pays in start time and metaspace for every class it loads. The
 * plugin is its own JVM listing the classes it loads while it answers a whole node cycle.
 */
class FileNodeLoadsOnlyWhatItUsesTest {
  /** What a file node with no peers and a properties config never needs, by class name prefix. */
  private static final List<String> UNUSED = List.of(
      "dev.caravan.csi.backend.qnap.", // the appliance's client and backend
      "dev.caravan.csi.backend.local.", // ZFS, through libzfs_core
      "dev.caravan.storage.internal.zfs.",
      // Not the whole zfs package: every driver's settings hold a KeyCosts, whose ZFS half is that
      // package's Pbkdf2Iters, a record of one number.
      "dev.caravan.storage.zfs.Zfs",
      // iSCSI sessions and their sweeper; not the sweeper's settings (IscsiGc), which serve parses
      "dev.caravan.csi.iscsi.IscsiSweeperService",
      "dev.caravan.csi.iscsi.JournalClaims",
      "dev.caravan.storage.iscsi.",
      "dev.caravan.storage.multipath.",
      "dev.caravan.csi.peer.PeerTls", // the peer channel's mTLS, its server and its clients
      "dev.caravan.csi.peer.PeerKeyManager",
      "dev.caravan.csi.peer.PeerTrustManager",
      "dev.caravan.csi.peer.PemMaterial",
      "dev.caravan.csi.peer.PeerServer",
      "dev.caravan.csi.peer.PeerClient",
      "io.netty.handler.ssl.",
      "org.bouncycastle.",
      "dev.caravan.csi.config.Hcl", // the HCL parser: this config is a properties file
      // replication's digest of a zero block, hashed by the interpreter if made at start
      "dev.caravan.csi.backend.file.FileReplication$ZeroDigest",
      "picocli.");

  @Test
  void aFileNodeThroughAWholeCycleLoadsNoQnapZfsPeerTlsOrHclCode() throws Exception {
    HostRequirements.assumeRootWithLoopDevices();
    try (PluginFixture f = PluginFixture.unstarted(TestBackend.file())) {
      Path loaded = f.work.resolve("classes.log");
      VolumeCapability cap = Caps.mount("ext4");
      try (PluginProcess plugin = PluginProcess.start(f, false,
          List.of("-Xlog:class+load=info:file=" + loaded + ":none:filecount=0"))) {
        f.identity.probe(ProbeRequest.getDefaultInstance());
        String id = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("loads")
            .addVolumeCapabilities(cap).setCapacityRange(Caps.bytes(16 * Caps.MIB)).build()).getVolume().getVolumeId();
        Path staging = f.dir("staging/loads");
        Path target = f.dir("per-alloc/a1/loads").resolve("rw");
        f.stage(id, staging, cap);
        f.publish(id, staging, target, cap);
        assertThat(f.node.nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(id)
            .setVolumePath(target.toString()).build()).getUsageCount()).isPositive();
        f.unpublish(id, target);
        f.unstage(id, staging);
        f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
        assertThat(plugin.isAlive()).isTrue();
      }
      List<String> classes = Files.readAllLines(loaded).stream()
          .map(line -> line.strip().split(" ", 2)[0])
          .toList();
      assertThat(classes).as("the log lists the classes the plugin used")
          .contains("dev.caravan.csi.cli.Main", "dev.caravan.storage.block.LoopDevices");
      assertThat(classes.stream().filter(c -> UNUSED.stream().anyMatch(c::startsWith)).toList())
          .as("classes a file node loaded that it never uses").isEmpty();
    }
  }
}
