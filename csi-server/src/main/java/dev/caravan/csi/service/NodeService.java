package dev.caravan.csi.service;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.Topology;
import dev.caravan.csi.backend.VolumeRef;
import dev.caravan.csi.node.AccessMode;
import dev.caravan.csi.node.AllowedRoots;
import dev.caravan.csi.node.NodeEngine;
import dev.caravan.csi.backend.VolumeLocks;
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
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeUsage;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Node service: validates and translates requests, serializes them per volume, and delegates to the
 * generic {@link NodeEngine}.
 *
 * <h2>Order of checks</h2>
 *
 * The spec leaves the order to the plugin when several conditions hold at once (csi-spec-rules.md
 * §3). Every node RPC answers with the first of these that fails:
 *
 * <ol>
 *   <li>Required fields present, and {@code volume_id} within CSI's bounds: INVALID_ARGUMENT naming
 *       the field. An empty {@code staging_target_path} in NodePublishVolume is FAILED_PRECONDITION
 *       instead, the spec's own row for a plugin that advertises STAGE_UNSTAGE_VOLUME.
 *   <li>The other fields that are not paths ({@code volume_capability}, {@code capacity_range},
 *       {@code volume_context.fsType}, {@code volume_context.access}): INVALID_ARGUMENT.
 *   <li>Which volume, before anything about the paths. First the id's form ({@link Ids}): an id the
 *       backend never issues names no volume, NOT_FOUND (NodeUnstageVolume: OK, nothing was staged);
 *       no such id reaches a lookup or a lock. Then, under the volume's lock (except in the read-only
 *       NodeGetVolumeStats), this node's journal and, for NodeStageVolume and NodePublishVolume, the
 *       backend:
 *       <ul>
 *         <li>NodeStageVolume, NodePublishVolume: staged here or known to the backend, else
 *             NOT_FOUND (a volume that exists but is not staged here is the FAILED_PRECONDITION of
 *             step 6: its request is checked like any other);
 *         <li>NodeGetVolumeStats, NodeExpandVolume: staged or published here, else NOT_FOUND;
 *         <li>NodeUnstageVolume, NodeUnpublishVolume: nothing of the volume on this node, so nothing
 *             to undo: OK at once (a replay after the volume is gone succeeds).
 *       </ul>
 *   <li>Paths: absolute and normalized ({@link Validate#path}), then below an allowed root with no
 *       symlink between root and path nor at the path ({@link AllowedRoots#resolve}):
 *       INVALID_ARGUMENT naming the field. Nothing is created, mounted or unmounted before this.
 *   <li>The operation's own state checks in {@link NodeEngine}: ALREADY_EXISTS for a repeat with an
 *       incompatible capability, FAILED_PRECONDITION for a capability the volume does not support (a
 *       stage for an access type it was not created for, a publish unlike its stage), a publish of a
 *       volume not staged here (or not at that staging path), a second target of a
 *       SINGLE_NODE_SINGLE_WRITER volume or an unstage under live targets, INVALID_ARGUMENT for a
 *       NodeExpandVolume capability unlike the stage, NOT_FOUND for a path that is not the volume's,
 *       and so on.
 * </ol>
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
  private final AllowedRoots roots;
  private final String nodeId;
  private final long maxVolumes;

  public NodeService(
      NodeEngine engine, ControllerBackend ids, VolumeLocks locks, AllowedRoots roots, String nodeId, long maxVolumes) {
    this.engine = engine;
    this.ids = ids;
    this.locks = locks;
    this.roots = roots;
    this.nodeId = nodeId;
    this.maxVolumes = maxVolumes;
  }

  @Override
  public void nodeStageVolume(NodeStageVolumeRequest req, StreamObserver<NodeStageVolumeResponse> out) {
    Rpc.unary(out, () -> {
      String id = req.getVolumeId();
      IdRules.requireBounded("volume_id", id);
      Validate.required("staging_target_path", req.getStagingTargetPath());
      if (!req.hasVolumeCapability()) {
        throw CsiException.invalid("volume_capability is required");
      }
      Capability cap = Validate.capability("volume_capability", req.getVolumeCapability());
      String fsType = cap.fsType().orElseGet(() -> contextFsType(req.getVolumeContextMap().get("fsType")));
      Optional<Set<AccessType>> created = createdFor(req.getVolumeContextMap().get(AccessType.CONTEXT_KEY));
      try (VolumeLocks.Held held = locks.acquire(Ids.existingVolume(ids, "volume_id", id))) {
        requireExists(id);
        Path staging = path("staging_target_path", req.getStagingTargetPath());
        if (created.isPresent() && !created.get().contains(cap.accessType())) {
          // A block-only volume may hold raw data no probe recognizes: a mount stage would format it.
          throw CsiException.failedPrecondition(
              "volume " + IdRules.printable(id) + " was created for " + AccessType.contextValue(created.get())
                  + " access only (volume_context." + AccessType.CONTEXT_KEY + "); volume_capability asks for "
                  + cap.accessType().word() + " access");
        }
        engine.stage(new NodeEngine.StageSpec(
            new VolumeRef(id, req.getVolumeContextMap(), req.getSecretsMap()), staging, cap.accessType(), fsType, cap.mountFlags(),
            mode(req.getVolumeCapability())));
      }
      return NodeStageVolumeResponse.getDefaultInstance();
    });
  }

  /** The access types a volume was created for, from its context; empty when it does not say. */
  private static Optional<Set<AccessType>> createdFor(String value) {
    if (value == null) {
      return Optional.empty(); // a volume made before access types were recorded
    }
    return Optional.of(AccessType.fromContextValue(value).orElseThrow(() -> CsiException.invalid(
        "volume_context." + AccessType.CONTEXT_KEY + " '" + IdRules.printable(value)
            + "' is not one this plugin writes: block, mount or block,mount")));
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
      String id = req.getVolumeId();
      IdRules.requireBounded("volume_id", id);
      Validate.required("staging_target_path", req.getStagingTargetPath());
      Optional<String> key = Ids.volume(ids, "volume_id", id);
      if (key.isEmpty()) {
        return NodeUnstageVolumeResponse.getDefaultInstance(); // an id never issued was never staged
      }
      try (VolumeLocks.Held held = locks.acquire(key.get())) {
        if (engine.journal().get(id).isPresent()) {
          engine.unstage(id, path("staging_target_path", req.getStagingTargetPath()));
        }
      }
      return NodeUnstageVolumeResponse.getDefaultInstance();
    });
  }

  @Override
  public void nodePublishVolume(NodePublishVolumeRequest req, StreamObserver<NodePublishVolumeResponse> out) {
    Rpc.unary(out, () -> {
      String id = req.getVolumeId();
      IdRules.requireBounded("volume_id", id);
      Validate.required("target_path", req.getTargetPath());
      if (!req.hasVolumeCapability()) {
        throw CsiException.invalid("volume_capability is required");
      }
      if (req.getStagingTargetPath().isEmpty()) {
        throw CsiException.failedPrecondition(
            "staging_target_path is required: this plugin stages volumes (STAGE_UNSTAGE_VOLUME), so NodeStageVolume"
                + " comes first and its staging_target_path goes with every NodePublishVolume");
      }
      Capability cap = Validate.capability("volume_capability", req.getVolumeCapability());
      boolean readOnly = req.getReadonly() || cap.readOnlyMode();
      try (VolumeLocks.Held held = locks.acquire(Ids.existingVolume(ids, "volume_id", id))) {
        requireExists(id);
        Path target = path("target_path", req.getTargetPath());
        Path staging = path("staging_target_path", req.getStagingTargetPath());
        if (target.startsWith(staging) || staging.startsWith(target)) {
          throw CsiException.invalid("target_path and staging_target_path must not contain one another");
        }
        engine.publish(new NodeEngine.PublishSpec(id, staging, target, cap.accessType(), cap.fsType(), readOnly,
            mode(req.getVolumeCapability()), cap.mountFlags()));
      }
      return NodePublishVolumeResponse.getDefaultInstance();
    });
  }

  @Override
  public void nodeUnpublishVolume(NodeUnpublishVolumeRequest req, StreamObserver<NodeUnpublishVolumeResponse> out) {
    Rpc.unary(out, () -> {
      String id = req.getVolumeId();
      IdRules.requireBounded("volume_id", id);
      Validate.required("target_path", req.getTargetPath());
      // NOT_FOUND for an id never issued: the spec's row for a volume that does not exist; Nomad
      // treats it as done.
      try (VolumeLocks.Held held = locks.acquire(Ids.existingVolume(ids, "volume_id", id))) {
        if (engine.journal().get(id).isPresent()) {
          engine.unpublish(id, path("target_path", req.getTargetPath()));
        }
      }
      return NodeUnpublishVolumeResponse.getDefaultInstance();
    });
  }

  @Override
  public void nodeGetVolumeStats(NodeGetVolumeStatsRequest req, StreamObserver<NodeGetVolumeStatsResponse> out) {
    Rpc.unary(out, () -> {
      String id = req.getVolumeId();
      IdRules.requireBounded("volume_id", id);
      Validate.required("volume_path", req.getVolumePath());
      Ids.existingVolume(ids, "volume_id", id);
      requireOnThisNode(id);
      NodeEngine.Stats stats = engine.stats(id, readPath(id, "volume_path", req.getVolumePath()));
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
      String id = req.getVolumeId();
      IdRules.requireBounded("volume_id", id);
      Validate.required("volume_path", req.getVolumePath());
      if (req.hasCapacityRange()) {
        Validate.capacity("capacity_range", req.getCapacityRange());
      }
      Optional<Capability> cap = req.hasVolumeCapability()
          ? Optional.of(Validate.capability("volume_capability", req.getVolumeCapability()))
          : Optional.empty();
      try (VolumeLocks.Held held = locks.acquire(Ids.existingVolume(ids, "volume_id", id))) {
        requireOnThisNode(id);
        long size = engine.expand(id, path("volume_path", req.getVolumePath()), cap.map(Capability::accessType),
            cap.flatMap(Capability::fsType), req.getSecretsMap());
        if (req.hasCapacityRange() && req.getCapacityRange().getRequiredBytes() > size) {
          throw CsiException.outOfRange(
              "the device of volume " + id + " is " + size + " bytes, below capacity_range.required_bytes "
                  + req.getCapacityRange().getRequiredBytes() + "; expand it with ControllerExpandVolume first");
        }
        long limit = req.hasCapacityRange() ? req.getCapacityRange().getLimitBytes() : 0;
        if (limit > 0 && limit < size) {
          throw CsiException.outOfRange(
              "the device of volume " + id + " is " + size + " bytes, above capacity_range.limit_bytes " + limit
                  + "; volumes only grow");
        }
        return NodeExpandVolumeResponse.newBuilder().setCapacityBytes(size).build();
      }
    });
  }

  /** Staged on this node, or known to the backend. */
  private void requireExists(String id) {
    if (engine.journal().get(id).isEmpty() && ids.findVolume(id).isEmpty()) {
      throw CsiException.notFound("volume_id " + IdRules.printable(id) + " does not exist");
    }
  }

  private void requireOnThisNode(String id) {
    if (engine.journal().get(id).isEmpty()) {
      throw CsiException.notFound("volume " + IdRules.printable(id) + " is not staged or published on this node");
    }
  }

  /**
   * A path a read-only call (NodeGetVolumeStats) only looks at: as {@link #path}, except that a path
   * the volume's journal record holds exactly is taken as it is, without walking its parents again.
   * It was resolved and checked when it was staged or published, and the engine only statx-es (never
   * following the last component) and statvfs-es it: nothing is mounted, unmounted or removed there.
   * A path that is malformed (relative, with dot segments) or outside the allowed roots is one the
   * volume cannot be at: NodeGetVolumeStats's only row for that is NOT_FOUND (the caller has checked
   * that the field is not empty, which stays a missing field).
   */
  private Path readPath(String volumeId, String field, String value) {
    try {
      Path p = Validate.path(field, value);
      if (engine.journal().get(volumeId).filter(v -> v.knowsPath(p)).isPresent()) {
        return p;
      }
      return roots.resolve(field, p);
    } catch (CsiException e) {
      if (e.kind() != CsiException.Kind.INVALID_ARGUMENT) {
        throw e;
      }
      throw CsiException.notFound(
          "volume " + IdRules.printable(volumeId) + " is not staged or published at " + field + " "
              + IdRules.printable(value) + ": " + e.getMessage());
    }
  }

  /** A request path as the engine works on it: well formed, then resolved within the allowed roots. */
  private Path path(String field, String value) {
    return roots.resolve(field, Validate.path(field, value));
  }

  /** The CSI access mode, which {@link Validate#capability} has already limited to the single-node ones. */
  private static AccessMode mode(VolumeCapability cap) {
    return switch (cap.getAccessMode().getMode()) {
      case SINGLE_NODE_WRITER -> AccessMode.SINGLE_NODE_WRITER;
      case SINGLE_NODE_READER_ONLY -> AccessMode.SINGLE_NODE_READER_ONLY;
      case SINGLE_NODE_SINGLE_WRITER -> AccessMode.SINGLE_NODE_SINGLE_WRITER;
      case SINGLE_NODE_MULTI_WRITER -> AccessMode.SINGLE_NODE_MULTI_WRITER;
      default -> throw CsiException.invalid(
          "volume_capability.access_mode.mode " + cap.getAccessMode().getMode() + " is not supported on a node");
    };
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
