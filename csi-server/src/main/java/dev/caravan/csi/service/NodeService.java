package dev.caravan.csi.service;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.Topology;
import dev.caravan.csi.backend.VolumeRef;
import dev.caravan.csi.node.NodeEngine;
import dev.caravan.csi.server.VolumeLocks;
import dev.caravan.csi.v1.NodeExpandVolumeRequest;
import dev.caravan.csi.v1.NodeExpandVolumeResponse;
import dev.caravan.csi.v1.NodeGetCapabilitiesRequest;
import dev.caravan.csi.v1.NodeGetCapabilitiesResponse;
import dev.caravan.csi.v1.NodeGetInfoRequest;
import dev.caravan.csi.v1.NodeGetInfoResponse;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsResponse;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodePublishVolumeResponse;
import dev.caravan.csi.v1.NodeServiceCapability;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeResponse;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeResponse;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeResponse;
import dev.caravan.csi.v1.VolumeUsage;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * Node service: validates and translates requests, serializes them per volume, and delegates to the
 * generic {@link NodeEngine}. Volume ids are checked with the backend's id rules before any path is
 * derived from them ({@link Ids}): an id the backend never issues is a volume that does not exist
 * here (NodeUnstage: OK, as for a volume not staged; every other RPC: NOT_FOUND), and calls lock the
 * same key as the controller's calls about that volume.
 */
public final class NodeService extends NodeGrpc.NodeImplBase {
  private static final List<NodeServiceCapability.RPC.Type> CAPABILITIES =
      List.of(
          NodeServiceCapability.RPC.Type.STAGE_UNSTAGE_VOLUME,
          NodeServiceCapability.RPC.Type.GET_VOLUME_STATS,
          NodeServiceCapability.RPC.Type.EXPAND_VOLUME,
          NodeServiceCapability.RPC.Type.VOLUME_CONDITION,
          NodeServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER);

  private final NodeEngine engine;
  private final ControllerBackend ids;
  private final VolumeLocks locks;
  private final String nodeId;
  private final long maxVolumes;

  public NodeService(NodeEngine engine, ControllerBackend ids, VolumeLocks locks, String nodeId, long maxVolumes) {
    this.engine = engine;
    this.ids = ids;
    this.locks = locks;
    this.nodeId = nodeId;
    this.maxVolumes = maxVolumes;
  }

  @Override
  public void nodeStageVolume(NodeStageVolumeRequest req, StreamObserver<NodeStageVolumeResponse> out) {
    Rpc.unary(out, () -> {
      IdRules.requireBounded("volume_id", req.getVolumeId());
      Path staging = Validate.path("staging_target_path", req.getStagingTargetPath());
      if (!req.hasVolumeCapability()) {
        throw CsiException.invalid("volume_capability is required");
      }
      Capability cap = Validate.capability("volume_capability", req.getVolumeCapability());
      String fsType = cap.fsType().orElseGet(() -> contextFsType(req.getVolumeContextMap().get("fsType")));
      try (VolumeLocks.Held held = locks.acquire(Ids.existingVolume(ids, "volume_id", req.getVolumeId()))) {
        engine.stage(new NodeEngine.StageSpec(
            new VolumeRef(req.getVolumeId(), req.getVolumeContextMap()), staging, cap.accessType(), fsType,
            cap.mountFlags(), cap.readOnlyMode()));
      }
      return NodeStageVolumeResponse.getDefaultInstance();
    });
  }

  private static String contextFsType(String value) {
    if (value == null || value.isEmpty()) {
      return "ext4";
    }
    if (!Validate.FS_TYPES.contains(value)) {
      throw CsiException.invalid(
          "volume_context.fsType '" + IdRules.printable(value) + "' is not supported; supported: "
              + String.join(", ", Validate.FS_TYPES));
    }
    return value;
  }

  @Override
  public void nodeUnstageVolume(NodeUnstageVolumeRequest req, StreamObserver<NodeUnstageVolumeResponse> out) {
    Rpc.unary(out, () -> {
      IdRules.requireBounded("volume_id", req.getVolumeId());
      Path staging = Validate.path("staging_target_path", req.getStagingTargetPath());
      Optional<String> key = Ids.volume(ids, "volume_id", req.getVolumeId());
      if (key.isEmpty()) {
        return NodeUnstageVolumeResponse.getDefaultInstance(); // an id never issued was never staged
      }
      try (VolumeLocks.Held held = locks.acquire(key.get())) {
        engine.unstage(req.getVolumeId(), staging);
      }
      return NodeUnstageVolumeResponse.getDefaultInstance();
    });
  }

  @Override
  public void nodePublishVolume(NodePublishVolumeRequest req, StreamObserver<NodePublishVolumeResponse> out) {
    Rpc.unary(out, () -> {
      IdRules.requireBounded("volume_id", req.getVolumeId());
      Path target = Validate.path("target_path", req.getTargetPath());
      if (req.getStagingTargetPath().isEmpty()) {
        throw CsiException.invalid("staging_target_path is required: this plugin stages volumes (STAGE_UNSTAGE_VOLUME)");
      }
      Path staging = Validate.path("staging_target_path", req.getStagingTargetPath());
      if (!req.hasVolumeCapability()) {
        throw CsiException.invalid("volume_capability is required");
      }
      Capability cap = Validate.capability("volume_capability", req.getVolumeCapability());
      if (target.startsWith(staging) || staging.startsWith(target)) {
        throw CsiException.invalid("target_path and staging_target_path must not contain one another");
      }
      boolean readOnly = req.getReadonly() || cap.readOnlyMode();
      try (VolumeLocks.Held held = locks.acquire(Ids.existingVolume(ids, "volume_id", req.getVolumeId()))) {
        engine.publish(new NodeEngine.PublishSpec(req.getVolumeId(), staging, target, cap.accessType(), readOnly));
      }
      return NodePublishVolumeResponse.getDefaultInstance();
    });
  }

  @Override
  public void nodeUnpublishVolume(NodeUnpublishVolumeRequest req, StreamObserver<NodeUnpublishVolumeResponse> out) {
    Rpc.unary(out, () -> {
      IdRules.requireBounded("volume_id", req.getVolumeId());
      Path target = Validate.path("target_path", req.getTargetPath());
      // NOT_FOUND for an id never issued: the spec's row for a volume that does not exist; Nomad
      // treats it as done.
      try (VolumeLocks.Held held = locks.acquire(Ids.existingVolume(ids, "volume_id", req.getVolumeId()))) {
        engine.unpublish(req.getVolumeId(), target);
      }
      return NodeUnpublishVolumeResponse.getDefaultInstance();
    });
  }

  @Override
  public void nodeGetVolumeStats(NodeGetVolumeStatsRequest req, StreamObserver<NodeGetVolumeStatsResponse> out) {
    Rpc.unary(out, () -> {
      IdRules.requireBounded("volume_id", req.getVolumeId());
      Path path = Validate.path("volume_path", req.getVolumePath());
      Ids.existingVolume(ids, "volume_id", req.getVolumeId());
      NodeEngine.Stats stats = engine.stats(req.getVolumeId(), path);
      NodeGetVolumeStatsResponse.Builder b = NodeGetVolumeStatsResponse.newBuilder()
          .setVolumeCondition(Convert.condition(stats.health()));
      if (stats.fs().isPresent()) {
        var fs = stats.fs().get();
        b.addUsage(VolumeUsage.newBuilder().setUnit(VolumeUsage.Unit.BYTES)
            .setTotal(fs.totalBytes()).setUsed(fs.usedBytes()).setAvailable(fs.availableBytes()));
        b.addUsage(VolumeUsage.newBuilder().setUnit(VolumeUsage.Unit.INODES)
            .setTotal(fs.totalInodes()).setUsed(fs.usedInodes()).setAvailable(fs.freeInodes()));
      } else if (stats.accessType() == AccessType.BLOCK) {
        b.addUsage(VolumeUsage.newBuilder().setUnit(VolumeUsage.Unit.BYTES).setTotal(stats.deviceBytes()));
      }
      return b.build();
    });
  }

  @Override
  public void nodeExpandVolume(NodeExpandVolumeRequest req, StreamObserver<NodeExpandVolumeResponse> out) {
    Rpc.unary(out, () -> {
      IdRules.requireBounded("volume_id", req.getVolumeId());
      Path path = Validate.path("volume_path", req.getVolumePath());
      if (req.hasCapacityRange()) {
        Validate.capacity("capacity_range", req.getCapacityRange());
      }
      if (req.hasVolumeCapability()) {
        Validate.capability("volume_capability", req.getVolumeCapability());
      }
      try (VolumeLocks.Held held = locks.acquire(Ids.existingVolume(ids, "volume_id", req.getVolumeId()))) {
        long size = engine.expand(req.getVolumeId(), path);
        if (req.hasCapacityRange() && req.getCapacityRange().getRequiredBytes() > size) {
          throw CsiException.outOfRange(
              "the device of volume " + req.getVolumeId() + " is " + size + " bytes, below capacity_range.required_bytes "
                  + req.getCapacityRange().getRequiredBytes() + "; expand it with ControllerExpandVolume first");
        }
        return NodeExpandVolumeResponse.newBuilder().setCapacityBytes(size).build();
      }
    });
  }

  @Override
  public void nodeGetCapabilities(NodeGetCapabilitiesRequest req, StreamObserver<NodeGetCapabilitiesResponse> out) {
    Rpc.unary(out, () -> {
      NodeGetCapabilitiesResponse.Builder b = NodeGetCapabilitiesResponse.newBuilder();
      for (NodeServiceCapability.RPC.Type t : CAPABILITIES) {
        b.addCapabilities(NodeServiceCapability.newBuilder().setRpc(NodeServiceCapability.RPC.newBuilder().setType(t)));
      }
      return b.build();
    });
  }

  @Override
  public void nodeGetInfo(NodeGetInfoRequest req, StreamObserver<NodeGetInfoResponse> out) {
    Rpc.unary(out, () -> NodeGetInfoResponse.newBuilder()
        .setNodeId(nodeId)
        .setMaxVolumesPerNode(maxVolumes)
        .setAccessibleTopology(Convert.topology(Topology.ofNode(nodeId)))
        .build());
  }
}
