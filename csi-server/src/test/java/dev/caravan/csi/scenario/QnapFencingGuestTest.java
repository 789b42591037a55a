package dev.caravan.csi.scenario;

import static dev.caravan.csi.testing.GrpcOutcomes.error;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.ControllerUnpublishVolumeRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.iscsi.Iscsi;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.multipath.Multipath;
import io.grpc.Status.Code;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The qnap fence on the wire, in the guest: a real LIO target whose ACL the simulated appliance sets
 * with CHAP, this node's real open-iscsi and multipathd. While another initiator holds the volume,
 * this node cannot log in (NodeStage is refused and leaves no session behind); once ControllerUnpublish
 * has removed that initiator and ControllerPublish admitted this one, it can, with the CHAP secrets
 * from the request. NodeUnstage logs out again and leaves no map.
 */
class QnapFencingGuestTest {
  private static final String OTHER = "iqn.2026-01.dev.caravan.test:other-node";
  private static final Map<String, String> SECRETS = Map.of("chapUser", "caravan-node", "chapPassword", "chap-secret-0123");

  @Test
  void anotherInitiatorsVolumeCannotBeLoggedIntoUntilItIsUnpublishedThere() throws IOException {
    TestBackend backend = TestBackend.qnapOnLio();
    try (PluginFixture f = PluginFixture.start(backend, s -> {
      Map<String, String> options = new HashMap<>(s.options());
      options.put("chap-user-secret", "chapUser");
      options.put("chap-password-secret", "chapPassword");
      return new Plugin.Settings(s.driver(), s.socket(), s.nodeId(), s.dataDir(), s.journalDir(), s.pluginName(),
          s.maxVolumes(), options);
    })) {
      String self = backend.nodeId();
      VolumeCapability cap = Caps.mount("ext4");
      Volume v = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("fenced").addVolumeCapabilities(cap)
          .setCapacityRange(Caps.bytes(1L << 30)).build()).getVolume();
      String id = v.getVolumeId();
      String iqn = v.getVolumeContextMap().get("targetIqn");
      assertThat(v.getVolumeContextMap()).containsEntry("chapUserSecret", "chapUser");
      Path staging = f.dir("staging/default/fenced/rw-file-system-single-node-writer");
      NodeStageVolumeRequest stage = NodeStageVolumeRequest.newBuilder().setVolumeId(id)
          .setStagingTargetPath(staging.toString()).setVolumeCapability(cap).putAllVolumeContext(v.getVolumeContextMap())
          .putAllSecrets(SECRETS).build();

      f.controller.controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId(OTHER)
          .setVolumeCapability(cap).putAllSecrets(SECRETS).build());
      var refused = error(() -> f.node.nodeStageVolume(stage));
      assertThat(refused.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);
      assertThat(refused.getStatus().getDescription()).contains("refused").contains(iqn);
      assertThat(Iscsi.system().sessions()).as("a refused stage leaves no session").noneMatch(s -> s.target().equals(iqn));
      assertThat(Iscsi.system().nodes()).as("nor a node record holding the CHAP secret").noneMatch(r -> r.target().equals(iqn));
      assertThat(MountTable.isMountPoint(staging)).isFalse();
      var held = error(() -> f.controller.controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder()
          .setVolumeId(id).setNodeId(self).setVolumeCapability(cap).putAllSecrets(SECRETS).build()));
      assertThat(held.getStatus().getCode()).isEqualTo(Code.FAILED_PRECONDITION);

      // `nomad volume detach` for the other node: ControllerUnpublish there, then publish here.
      f.controller.controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id)
          .setNodeId(OTHER).build());
      f.controller.controllerPublishVolume(ControllerPublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId(self)
          .setVolumeCapability(cap).putAllSecrets(SECRETS).build());
      f.node.nodeStageVolume(stage);
      assertThat(MountTable.at(staging)).get().satisfies(m -> assertThat(m.fsType()).isEqualTo("ext4"));
      assertThat(Iscsi.system().sessions()).as("logged in on both portals with CHAP")
          .filteredOn(s -> s.target().equals(iqn)).hasSize(2);
      Files.writeString(staging.resolve("owner.txt"), self);

      f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
          .setStagingTargetPath(staging.toString()).build());
      assertThat(Iscsi.system().sessions()).as("unstage logs out").noneMatch(s -> s.target().equals(iqn));
      assertThat(Multipath.system().maps()).as("and flushes the map")
          .noneMatch(m -> m.wwid().value().equals("3" + v.getVolumeContextMap().get("naa")));
      assertThat(Iscsi.system().nodes()).as("and deletes the node records, CHAP secret included")
          .noneMatch(r -> r.target().equals(iqn));
      f.controller.controllerUnpublishVolume(ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id)
          .setNodeId(self).build());
      f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
      assertThat(f.storageObjects()).isEmpty();
    }
  }
}
