package dev.caravan.csi.service;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.CapacityReport;
import dev.caravan.csi.backend.ContentSource;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Encryption;
import dev.caravan.csi.backend.ReplicationSettings;
import dev.caravan.csi.backend.Passphrase;
import dev.caravan.csi.backend.ExpandResult;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.SnapshotInfo;
import dev.caravan.csi.backend.Topology;
import dev.caravan.csi.backend.VolumeInfo;
import dev.caravan.csi.backend.VolumeRequest;
import dev.caravan.csi.backend.VolumeStatus;
import dev.caravan.csi.backend.VolumeLocks;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.ControllerExpandVolumeResponse;
import dev.caravan.csi.v1.ControllerGetCapabilitiesRequest;
import dev.caravan.csi.v1.ControllerGetCapabilitiesResponse;
import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.ControllerGetVolumeResponse;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.ControllerPublishVolumeResponse;
import dev.caravan.csi.v1.ControllerUnpublishVolumeRequest;
import dev.caravan.csi.v1.ControllerUnpublishVolumeResponse;
import dev.caravan.csi.v1.ControllerServiceCapability;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateSnapshotResponse;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.CreateVolumeResponse;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteSnapshotResponse;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeResponse;
import dev.caravan.csi.v1.GetCapacityRequest;
import dev.caravan.csi.v1.GetCapacityResponse;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListSnapshotsResponse;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.ListVolumesResponse;
import dev.caravan.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.caravan.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.caravan.csi.v1.VolumeContentSource;
import com.google.protobuf.Int64Value;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Controller service: validates and translates requests, serializes them per volume (contended →
 * ABORTED), and delegates to the backend. ControllerPublish/Unpublish exist only for a backend that
 * {@link ControllerBackend#publishes() publishes} (qnap: the target ACL is the fence); for the others
 * (file, local attach on the node, in NodeStage) they stay UNIMPLEMENTED and the capability is not
 * advertised.
 *
 * <p>Ids: what no id can be is INVALID_ARGUMENT; an id the backend could never have issued names
 * nothing, so DeleteVolume and DeleteSnapshot answer OK and every other RPC NOT_FOUND, after the
 * request's other fields were checked and without calling the backend ({@link Ids}). Every call
 * that changes an object holds the backend's lock key of that object, derived alike from a CO name
 * and from the id the name yields, and shared with the node service.
 *
 * <p>ValidateVolumeCapabilities compares the request with what the volume is: the access types
 * CreateVolume was asked for ({@link VolumeInfo#accessTypes()}; both for volumes made before they
 * were recorded), and for mount access an empty {@code fs_type} or the filesystem CreateVolume
 * recorded ({@link VolumeInfo#fsType()}). ControllerExpandVolume refuses a capability that fails the
 * same comparison (INVALID_ARGUMENT). {@code confirmed} echoes the capabilities, the {@code fsType}
 * parameter and the {@code volume_context} entries that were compared, nothing unchecked.
 */
public final class ControllerService extends ControllerGrpc.ControllerImplBase {
  private static final List<ControllerServiceCapability.RPC.Type> CAPABILITIES =
      List.of(
          ControllerServiceCapability.RPC.Type.CREATE_DELETE_VOLUME,
          ControllerServiceCapability.RPC.Type.LIST_VOLUMES,
          ControllerServiceCapability.RPC.Type.GET_CAPACITY,
          ControllerServiceCapability.RPC.Type.CREATE_DELETE_SNAPSHOT,
          ControllerServiceCapability.RPC.Type.LIST_SNAPSHOTS,
          ControllerServiceCapability.RPC.Type.CLONE_VOLUME,
          ControllerServiceCapability.RPC.Type.EXPAND_VOLUME,
          ControllerServiceCapability.RPC.Type.VOLUME_CONDITION,
          ControllerServiceCapability.RPC.Type.GET_VOLUME,
          ControllerServiceCapability.RPC.Type.SINGLE_NODE_MULTI_WRITER);

  /** The CreateVolume parameter both backends record a volume's filesystem from. */
  private static final String FS_TYPE_PARAMETER = "fsType";
  private static final String SOURCE_SNAPSHOT = "volume_content_source.snapshot.snapshot_id";
  private static final String SOURCE_VOLUME = "volume_content_source.volume.volume_id";

  private final ControllerBackend backend;
  private final VolumeLocks locks;
  private final Topology nodeTopology;

  public ControllerService(ControllerBackend backend, VolumeLocks locks, String nodeId) {
    this.backend = backend;
    this.locks = locks;
    this.nodeTopology = Topology.ofNode(nodeId);
  }

  @Override
  public void createVolume(CreateVolumeRequest req, StreamObserver<CreateVolumeResponse> out) {
    Rpc.unary(out, () -> {
      Validate.name("name", req.getName());
      List<Capability> caps = Validate.capabilities("volume_capabilities", req.getVolumeCapabilitiesList());
      CapacityRange capacity =
          req.hasCapacityRange() ? Validate.capacity("capacity_range", req.getCapacityRange()) : CapacityRange.UNSPECIFIED;
      Map<String, String> parameters = ReplicationSettings.parametersFor(backend,
          Encryption.parametersFor(backend, req.getParametersMap()));
      Validate.parameters("parameters", parameters, backend.knownParameters());
      if (!req.getMutableParamsMap().isEmpty()) {
        throw CsiException.invalid("mutable_parameters are not supported (no MODIFY_VOLUME capability)");
      }
      Set<String> fsTypes =
          caps.stream().flatMap(c -> c.fsType().stream()).collect(Collectors.toSet());
      if (fsTypes.size() > 1) {
        throw CsiException.invalid(
            "volume_capabilities ask for different filesystems " + fsTypes + "; a volume has one");
      }
      EnumSet<AccessType> types = EnumSet.noneOf(AccessType.class);
      caps.forEach(c -> types.add(c.accessType()));
      Optional<ContentSource> source = contentSource(req);
      String key = Ids.volumeNamed(backend, req.getName());
      String sourceKey = source.map(this::existingSourceKey).orElse(key);
      Optional<Passphrase> passphrase = Encryption.mode(parameters) == Encryption.Mode.ON
          ? Optional.of(Encryption.passphrase("CreateVolume", req.getSecretsMap()))
          : Optional.empty();
      try (VolumeLocks.Held held = locks.acquire(key, sourceKey)) {
        VolumeRequest request =
            new VolumeRequest(
                req.getName(),
                capacity,
                types,
                fsTypes.stream().findFirst(),
                parameters,
                source,
                Convert.topologies(req.getAccessibilityRequirements().getRequisiteList()),
                Convert.topologies(req.getAccessibilityRequirements().getPreferredList()),
                passphrase);
        VolumeInfo created = backend.createVolume(request);
        return CreateVolumeResponse.newBuilder().setVolume(Convert.volume(created)).build();
      } finally {
        passphrase.ifPresent(Passphrase::close);
      }
    });
  }

  private Optional<ContentSource> contentSource(CreateVolumeRequest req) {
    if (!req.hasVolumeContentSource()) {
      return Optional.empty();
    }
    VolumeContentSource src = req.getVolumeContentSource();
    return switch (src.getTypeCase()) {
      case SNAPSHOT -> {
        String id = src.getSnapshot().getSnapshotId();
        IdRules.requireBounded(SOURCE_SNAPSHOT, id);
        yield Optional.of(ContentSource.snapshot(id));
      }
      case VOLUME -> {
        String id = src.getVolume().getVolumeId();
        IdRules.requireBounded(SOURCE_VOLUME, id);
        yield Optional.of(ContentSource.volume(id));
      }
      case TYPE_NOT_SET -> throw CsiException.invalid("volume_content_source must set snapshot or volume");
    };
  }

  /** The source's lock key; NOT_FOUND for an id the backend never issues. */
  private String existingSourceKey(ContentSource s) {
    return switch (s.kind()) {
      case SNAPSHOT -> Ids.existingSnapshot(backend, SOURCE_SNAPSHOT, s.id());
      case VOLUME -> Ids.existingVolume(backend, SOURCE_VOLUME, s.id());
    };
  }

  @Override
  public void deleteVolume(DeleteVolumeRequest req, StreamObserver<DeleteVolumeResponse> out) {
    Rpc.unary(out, () -> {
      Optional<String> key = Ids.volume(backend, "volume_id", req.getVolumeId());
      if (key.isPresent()) { // else an id never issued: there is nothing to delete
        try (VolumeLocks.Held held = locks.acquire(key.get())) {
          backend.deleteVolume(req.getVolumeId());
        }
      }
      return DeleteVolumeResponse.getDefaultInstance();
    });
  }

  @Override
  public void validateVolumeCapabilities(
      ValidateVolumeCapabilitiesRequest req, StreamObserver<ValidateVolumeCapabilitiesResponse> out) {
    Rpc.unary(out, () -> {
      IdRules.requireBounded("volume_id", req.getVolumeId());
      if (req.getVolumeCapabilitiesCount() == 0) {
        throw CsiException.invalid("volume_capabilities is required (at least one volume capability)");
      }
      Ids.existingVolume(backend, "volume_id", req.getVolumeId());
      VolumeInfo volume = backend.findVolume(req.getVolumeId())
          .orElseThrow(() -> CsiException.notFound("volume_id " + req.getVolumeId() + " does not exist"));
      List<Capability> caps;
      try {
        caps = Validate.capabilities("volume_capabilities", req.getVolumeCapabilitiesList());
        Validate.parameters("parameters", req.getParametersMap(), backend.knownParameters());
      } catch (CsiException unsupported) {
        return ValidateVolumeCapabilitiesResponse.newBuilder().setMessage(unsupported.getMessage()).build();
      }
      return compare(volume, req, caps);
    });
  }

  /** Confirms the request if the volume is what it asks for; echoes only what was compared. */
  private ValidateVolumeCapabilitiesResponse compare(
      VolumeInfo volume, ValidateVolumeCapabilitiesRequest req, List<Capability> caps) {
    List<String> mismatches = new ArrayList<>();
    for (int i = 0; i < caps.size(); i++) {
      unsupported(volume, "volume_capabilities[" + i + "]", caps.get(i)).ifPresent(mismatches::add);
    }
    Map<String, String> parameters = new TreeMap<>();
    String fsParameter = req.getParametersMap().get(FS_TYPE_PARAMETER);
    if (fsParameter != null) {
      if (fsParameter.equals(volume.fsType())) {
        parameters.put(FS_TYPE_PARAMETER, fsParameter);
      } else {
        mismatches.add("parameters." + FS_TYPE_PARAMETER + " is " + IdRules.printable(fsParameter) + ", but volume "
            + volume.id() + " was created for " + volume.fsType());
      }
    }
    Map<String, String> context = new TreeMap<>();
    req.getVolumeContextMap().forEach((key, value) -> {
      String actual = volume.context().get(key);
      if (actual == null) {
        return; // a key this plugin never sets: not checked, so not confirmed
      }
      if (actual.equals(value)) {
        context.put(key, value);
      } else {
        mismatches.add("volume_context." + IdRules.printable(key) + " is " + IdRules.printable(value) + ", but volume "
            + volume.id() + " has " + actual);
      }
    });
    if (!mismatches.isEmpty()) {
      return ValidateVolumeCapabilitiesResponse.newBuilder().setMessage(String.join("; ", mismatches)).build();
    }
    return ValidateVolumeCapabilitiesResponse.newBuilder()
        .setConfirmed(ValidateVolumeCapabilitiesResponse.Confirmed.newBuilder()
            .addAllVolumeCapabilities(req.getVolumeCapabilitiesList())
            .putAllParameters(parameters)
            .putAllVolumeContext(context))
        .build();
  }

  /** Why {@code volume} cannot be used as {@code cap} asks, if it cannot: both are fixed at creation. */
  private static Optional<String> unsupported(VolumeInfo volume, String field, Capability cap) {
    if (!volume.accessTypes().contains(cap.accessType())) {
      return Optional.of(field + " asks for " + cap.accessType().word() + " access, but volume " + volume.id()
          + " was created for " + AccessType.contextValue(volume.accessTypes()) + " access only");
    }
    Optional<String> fs = cap.fsType();
    if (cap.accessType() == AccessType.MOUNT && fs.isPresent() && !fs.get().equals(volume.fsType())) {
      return Optional.of(field + ".mount.fs_type is " + fs.get() + ", but volume " + volume.id() + " was created for "
          + volume.fsType() + " (a volume's filesystem is fixed at creation)");
    }
    return Optional.empty();
  }

  @Override
  public void listVolumes(ListVolumesRequest req, StreamObserver<ListVolumesResponse> out) {
    Rpc.unary(out, () -> {
      Pages.Page<VolumeInfo> page =
          Pages.page(backend.listVolumes(), VolumeInfo::id, req.getMaxEntries(), req.getStartingToken());
      ListVolumesResponse.Builder b = ListVolumesResponse.newBuilder().setNextToken(page.nextToken());
      for (VolumeInfo v : page.entries()) {
        // A volume deleted since the listing is left out: pages may have gaps.
        backend.volumeStatus(v.id()).ifPresent(status -> b.addEntries(ListVolumesResponse.Entry.newBuilder()
            .setVolume(Convert.volume(status.volume()))
            .setStatus(ListVolumesResponse.VolumeStatus.newBuilder()
                .addAllPublishedNodeIds(status.attachedNodes())
                .setVolumeCondition(Convert.condition(status.health())))));
      }
      return b.build();
    });
  }

  @Override
  public void getCapacity(GetCapacityRequest req, StreamObserver<GetCapacityResponse> out) {
    Rpc.unary(out, () -> {
      Map<String, String> parameters = ReplicationSettings.parametersFor(backend,
          Encryption.parametersFor(backend, req.getParametersMap()));
      Validate.parameters("parameters", parameters, backend.knownParameters());
      CapacityReport report = backend.capacity(parameters);
      GetCapacityResponse.Builder b = GetCapacityResponse.newBuilder()
          .setMaximumVolumeSize(Int64Value.of(report.maximumVolumeBytes()))
          .setMinimumVolumeSize(Int64Value.of(report.minimumVolumeBytes()));
      boolean usable = true;
      if (req.hasAccessibleTopology()
          && !nodeTopology.satisfies(new Topology(req.getAccessibleTopology().getSegmentsMap()))) {
        usable = false;
      }
      if (req.getVolumeCapabilitiesCount() > 0) {
        try {
          Validate.capabilities("volume_capabilities", req.getVolumeCapabilitiesList());
        } catch (CsiException unsupported) {
          usable = false;
        }
      }
      return b.setAvailableCapacity(usable ? report.availableBytes() : 0).build();
    });
  }

  @Override
  public void controllerGetCapabilities(
      ControllerGetCapabilitiesRequest req, StreamObserver<ControllerGetCapabilitiesResponse> out) {
    Rpc.unary(out, () -> {
      ControllerGetCapabilitiesResponse.Builder b = ControllerGetCapabilitiesResponse.newBuilder();
      List<ControllerServiceCapability.RPC.Type> types = new ArrayList<>(CAPABILITIES);
      if (backend.publishes()) {
        types.add(ControllerServiceCapability.RPC.Type.PUBLISH_UNPUBLISH_VOLUME);
        types.add(ControllerServiceCapability.RPC.Type.LIST_VOLUMES_PUBLISHED_NODES);
      }
      for (ControllerServiceCapability.RPC.Type t : types) {
        b.addCapabilities(ControllerServiceCapability.newBuilder()
            .setRpc(ControllerServiceCapability.RPC.newBuilder().setType(t)));
      }
      return b.build();
    });
  }

  @Override
  public void createSnapshot(CreateSnapshotRequest req, StreamObserver<CreateSnapshotResponse> out) {
    Rpc.unary(out, () -> {
      IdRules.requireBounded("source_volume_id", req.getSourceVolumeId());
      Validate.name("name", req.getName());
      Validate.parameters("parameters", req.getParametersMap(), backend.knownSnapshotParameters());
      String sourceKey = Ids.existingVolume(backend, "source_volume_id", req.getSourceVolumeId());
      try (VolumeLocks.Held held = locks.acquire(Ids.snapshotNamed(backend, req.getName()), sourceKey)) {
        SnapshotInfo s = backend.createSnapshot(req.getSourceVolumeId(), req.getName(), req.getParametersMap());
        return CreateSnapshotResponse.newBuilder().setSnapshot(Convert.snapshot(s)).build();
      }
    });
  }

  @Override
  public void deleteSnapshot(DeleteSnapshotRequest req, StreamObserver<DeleteSnapshotResponse> out) {
    Rpc.unary(out, () -> {
      Optional<String> key = Ids.snapshot(backend, "snapshot_id", req.getSnapshotId());
      if (key.isPresent()) { // else an id never issued: there is nothing to delete
        try (VolumeLocks.Held held = locks.acquire(key.get())) {
          backend.deleteSnapshot(req.getSnapshotId());
        }
      }
      return DeleteSnapshotResponse.getDefaultInstance();
    });
  }

  @Override
  public void listSnapshots(ListSnapshotsRequest req, StreamObserver<ListSnapshotsResponse> out) {
    Rpc.unary(out, () -> {
      List<SnapshotInfo> all = backend.listSnapshots();
      String byId = req.getSnapshotId();
      String bySource = req.getSourceVolumeId();
      List<SnapshotInfo> filtered = all.stream()
          .filter(s -> byId.isEmpty() || s.id().equals(byId))
          .filter(s -> bySource.isEmpty() || s.sourceVolumeId().equals(bySource))
          .toList();
      Pages.Page<SnapshotInfo> page =
          Pages.page(filtered, SnapshotInfo::id, req.getMaxEntries(), req.getStartingToken());
      ListSnapshotsResponse.Builder b = ListSnapshotsResponse.newBuilder().setNextToken(page.nextToken());
      for (SnapshotInfo s : page.entries()) {
        b.addEntries(ListSnapshotsResponse.Entry.newBuilder().setSnapshot(Convert.snapshot(s)));
      }
      return b.build();
    });
  }

  @Override
  public void controllerExpandVolume(
      ControllerExpandVolumeRequest req, StreamObserver<ControllerExpandVolumeResponse> out) {
    Rpc.unary(out, () -> {
      IdRules.requireBounded("volume_id", req.getVolumeId());
      if (!req.hasCapacityRange()) {
        throw CsiException.invalid("capacity_range is required");
      }
      CapacityRange range = Validate.capacity("capacity_range", req.getCapacityRange());
      if (!range.hasRequired() && !range.hasLimit()) {
        throw CsiException.invalid("capacity_range must set required_bytes or limit_bytes");
      }
      Optional<Capability> cap = req.hasVolumeCapability()
          ? Optional.of(Validate.capability("volume_capability", req.getVolumeCapability()))
          : Optional.empty();
      String key = Ids.existingVolume(backend, "volume_id", req.getVolumeId());
      try (VolumeLocks.Held held = locks.acquire(key)) {
        if (cap.isPresent()) {
          VolumeInfo volume = backend.findVolume(req.getVolumeId())
              .orElseThrow(() -> CsiException.notFound("volume_id " + req.getVolumeId() + " does not exist"));
          unsupported(volume, "volume_capability", cap.get()).ifPresent(why -> {
            throw CsiException.invalid(why);
          });
        }
        ExpandResult r = backend.expandVolume(req.getVolumeId(), range, cap.map(Capability::accessType).orElse(null));
        return ControllerExpandVolumeResponse.newBuilder()
            .setCapacityBytes(r.capacityBytes())
            .setNodeExpansionRequired(r.nodeExpansionRequired())
            .build();
      }
    });
  }

  @Override
  public void controllerGetVolume(
      ControllerGetVolumeRequest req, StreamObserver<ControllerGetVolumeResponse> out) {
    Rpc.unary(out, () -> {
      Ids.existingVolume(backend, "volume_id", req.getVolumeId());
      VolumeStatus status = backend.volumeStatus(req.getVolumeId())
          .orElseThrow(() -> CsiException.notFound("volume_id " + req.getVolumeId() + " does not exist"));
      return ControllerGetVolumeResponse.newBuilder()
          .setVolume(Convert.volume(status.volume()))
          .setStatus(ControllerGetVolumeResponse.VolumeStatus.newBuilder()
              .addAllPublishedNodeIds(status.attachedNodes())
              .setVolumeCondition(Convert.condition(status.health())))
          .build();
    });
  }

  @Override
  public void controllerPublishVolume(
      ControllerPublishVolumeRequest req, StreamObserver<ControllerPublishVolumeResponse> out) {
    Rpc.unary(out, () -> {
      if (!backend.publishes()) {
        throw new CsiException(CsiException.Kind.UNIMPLEMENTED,
            "ControllerPublishVolume is not supported: this backend attaches volumes on the node (NodeStage)");
      }
      IdRules.requireBounded("volume_id", req.getVolumeId());
      IdRules.requireBounded("node_id", req.getNodeId());
      if (!req.hasVolumeCapability()) {
        throw CsiException.invalid("volume_capability is required");
      }
      Validate.capability("volume_capability", req.getVolumeCapability());
      if (req.getReadonly()) {
        throw CsiException.invalid("readonly must be false: the plugin does not advertise PUBLISH_READONLY");
      }
      String key = Ids.existingVolume(backend, "volume_id", req.getVolumeId());
      try (VolumeLocks.Held held = locks.acquire(key)) {
        return ControllerPublishVolumeResponse.newBuilder()
            .putAllPublishContext(backend.publishVolume(req.getVolumeId(), req.getNodeId(), req.getSecretsMap()))
            .build();
      }
    });
  }

  @Override
  public void controllerUnpublishVolume(
      ControllerUnpublishVolumeRequest req, StreamObserver<ControllerUnpublishVolumeResponse> out) {
    Rpc.unary(out, () -> {
      if (!backend.publishes()) {
        throw new CsiException(CsiException.Kind.UNIMPLEMENTED,
            "ControllerUnpublishVolume is not supported: this backend attaches volumes on the node (NodeStage)");
      }
      Optional<String> key = Ids.volume(backend, "volume_id", req.getVolumeId());
      if (!req.getNodeId().isEmpty()) {
        IdRules.requireBounded("node_id", req.getNodeId());
      }
      if (key.isPresent()) { // else an id never issued: published nowhere
        try (VolumeLocks.Held held = locks.acquire(key.get())) {
          backend.unpublishVolume(req.getVolumeId(),
              req.getNodeId().isEmpty() ? Optional.empty() : Optional.of(req.getNodeId()));
        }
      }
      return ControllerUnpublishVolumeResponse.getDefaultInstance();
    });
  }
}
