package dev.caravan.csi.peer;

import com.google.protobuf.Message;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.IdShape;
import dev.caravan.csi.peer.v1.CreateSnapshotCall;
import dev.caravan.csi.backend.Replication;
import dev.caravan.csi.peer.v1.CreateVolumeCall;
import dev.caravan.csi.peer.v1.DeleteReplicaAnswer;
import dev.caravan.csi.peer.v1.DeleteReplicaCall;
import dev.caravan.csi.peer.v1.ReplicaStateAnswer;
import dev.caravan.csi.peer.v1.ReplicaStateCall;
import dev.caravan.csi.peer.v1.ReplicateAnswer;
import dev.caravan.csi.peer.v1.ReplicateChunk;
import dev.caravan.csi.peer.v1.DeleteSnapshotCall;
import dev.caravan.csi.peer.v1.DeleteVolumeCall;
import dev.caravan.csi.peer.v1.ExpandVolumeCall;
import dev.caravan.csi.peer.v1.GetCapacityCall;
import dev.caravan.csi.peer.v1.GetVolumeCall;
import dev.caravan.csi.peer.v1.ListSnapshotsCall;
import dev.caravan.csi.peer.v1.ListVolumesCall;
import dev.caravan.csi.peer.v1.NamesAnswer;
import dev.caravan.csi.peer.v1.NamesQuery;
import dev.caravan.csi.peer.v1.NodeLayersAnswer;
import dev.caravan.csi.peer.v1.NodeLayersCall;
import dev.caravan.csi.peer.v1.PeerGrpc;
import dev.caravan.csi.peer.v1.PlacementQuery;
import dev.caravan.csi.peer.v1.PlacementReport;
import dev.caravan.csi.peer.v1.ReleaseNameAnswer;
import dev.caravan.csi.peer.v1.ReleaseNameCall;
import dev.caravan.csi.peer.v1.ValidateVolumeCall;
import dev.caravan.csi.service.ControllerService;
import dev.caravan.csi.service.Rpc;
import dev.caravan.csi.v1.ControllerExpandVolumeResponse;
import dev.caravan.csi.v1.ControllerGetVolumeResponse;
import dev.caravan.csi.v1.CreateSnapshotResponse;
import dev.caravan.csi.v1.CreateVolumeResponse;
import dev.caravan.csi.v1.DeleteSnapshotResponse;
import dev.caravan.csi.v1.DeleteVolumeResponse;
import dev.caravan.csi.v1.GetCapacityResponse;
import dev.caravan.csi.v1.ListSnapshotsResponse;
import dev.caravan.csi.v1.ListVolumesResponse;
import dev.caravan.csi.v1.ValidateVolumeCapabilitiesResponse;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Clock;
import java.util.Optional;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * The owner's side of the peer endpoint: runs a forwarded controller call on this node's own storage,
 * through the same {@link ControllerService} its CSI socket uses (same validation, same locks). It
 * never forwards again, and refuses an id another node owns, so no node acts on another's pool; the
 * one exception is PlaceVolume, where this node is a volume name's home and has its owner create it.
 * The calls that place, survey or list names are refused when the sender's view of the peer set is
 * not this node's ({@link HomeAuthority}).
 * Every call must carry a deadline and an idempotency key; changing calls run once per key.
 */
final class PeerService extends PeerGrpc.PeerImplBase {
  private static final int KEY_MAX = 128;

  private final ControllerService local;
  private final ControllerBackend backend;
  private final String self;
  private final long reserveBytes;
  private final RoutingControllerService home;
  private final HomeAuthority authority;
  private final Function<String, NodeLayersAnswer> nodeLayers;
  private final ReplayCache replays = new ReplayCache(Clock.systemUTC());
  private final Set<String> receiving = ConcurrentHashMap.newKeySet();

  /**
   * @param home this node's routing controller: the home's part of CreateVolume and of a deleted name's
   *     release, and the owner's part of DeleteVolume
   * @param authority this node's view, which the calls that place, survey or list names are checked against
   * @param nodeLayers this node's own node-side layers of a volume id (read-only)
   */
  PeerService(ControllerService local, ControllerBackend backend, String self, long reserveBytes,
      RoutingControllerService home, HomeAuthority authority,
      Function<String, NodeLayersAnswer> nodeLayers) {
    this.local = local;
    this.backend = backend;
    this.self = self;
    this.reserveBytes = reserveBytes;
    this.home = home;
    this.authority = authority;
    this.nodeLayers = nodeLayers;
  }

  @Override
  public void placeVolume(CreateVolumeCall call, StreamObserver<CreateVolumeResponse> out) {
    changing(out, call.getIdempotencyKey(), call, () -> home.place(call));
  }

  @Override
  public void createVolume(CreateVolumeCall call, StreamObserver<CreateVolumeResponse> out) {
    changing(out, call.getIdempotencyKey(), call, () -> authority.admitCreate(call.getView(),
        call.getOwnerGeneration(), () -> home.createHere(call.getRequest())));
  }

  @Override
  public void deleteVolume(DeleteVolumeCall call, StreamObserver<DeleteVolumeResponse> out) {
    changing(out, call.getIdempotencyKey(), call, () -> {
      requireOwnVolume(call.getRequest().getVolumeId());
      return home.deleteHere(call.getRequest());
    });
  }

  @Override
  public void expandVolume(ExpandVolumeCall call, StreamObserver<ControllerExpandVolumeResponse> out) {
    changing(out, call.getIdempotencyKey(), call, () -> {
      requireOwnVolume(call.getRequest().getVolumeId());
      return InProcess.call(local::controllerExpandVolume, call.getRequest());
    });
  }

  @Override
  public void createSnapshot(CreateSnapshotCall call, StreamObserver<CreateSnapshotResponse> out) {
    changing(out, call.getIdempotencyKey(), call, () -> {
      requireOwnVolume(call.getRequest().getSourceVolumeId());
      return InProcess.call(local::createSnapshot, call.getRequest());
    });
  }

  @Override
  public void deleteSnapshot(DeleteSnapshotCall call, StreamObserver<DeleteSnapshotResponse> out) {
    changing(out, call.getIdempotencyKey(), call, () -> {
      requireOwn("snapshot_id", call.getRequest().getSnapshotId(), backend.snapshotOwner(call.getRequest().getSnapshotId()));
      return InProcess.call(local::deleteSnapshot, call.getRequest());
    });
  }

  @Override
  public void getVolume(GetVolumeCall call, StreamObserver<ControllerGetVolumeResponse> out) {
    reading(out, call.getIdempotencyKey(), () -> {
      requireOwnVolume(call.getRequest().getVolumeId());
      return InProcess.call(local::controllerGetVolume, call.getRequest());
    });
  }

  @Override
  public void validateVolume(ValidateVolumeCall call, StreamObserver<ValidateVolumeCapabilitiesResponse> out) {
    reading(out, call.getIdempotencyKey(), () -> {
      requireOwnVolume(call.getRequest().getVolumeId());
      return InProcess.call(local::validateVolumeCapabilities, call.getRequest());
    });
  }

  @Override
  public void listVolumes(ListVolumesCall call, StreamObserver<ListVolumesResponse> out) {
    reading(out, call.getIdempotencyKey(), () -> InProcess.call(local::listVolumes, call.getRequest()));
  }

  @Override
  public void listSnapshots(ListSnapshotsCall call, StreamObserver<ListSnapshotsResponse> out) {
    reading(out, call.getIdempotencyKey(), () -> InProcess.call(local::listSnapshots, call.getRequest()));
  }

  @Override
  public void getCapacity(GetCapacityCall call, StreamObserver<GetCapacityResponse> out) {
    reading(out, call.getIdempotencyKey(), () -> InProcess.call(local::getCapacity, call.getRequest()));
  }

  @Override
  public void placement(PlacementQuery q, StreamObserver<PlacementReport> out) {
    reading(out, q.getIdempotencyKey(), () -> {
      long generation = authority.check(q.getView()).generation();
      Supplier<PlacementReport> report =
          () -> NodeReport.of(backend, self, reserveBytes, q.getVolumeName(), q.getParametersMap(), generation);
      // Whether this node holds a name is read after the creates it already admitted have finished.
      return q.getVolumeName().isEmpty() ? report.get() : authority.listing(report);
    });
  }

  @Override
  public void releaseName(ReleaseNameCall call, StreamObserver<ReleaseNameAnswer> out) {
    changing(out, call.getIdempotencyKey(), call, () -> home.release(call));
  }

  @Override
  public void names(NamesQuery q, StreamObserver<NamesAnswer> out) {
    reading(out, q.getIdempotencyKey(), () -> authority.names(q.getView()));
  }

  @Override
  public void nodeLayers(NodeLayersCall call, StreamObserver<NodeLayersAnswer> out) {
    reading(out, call.getIdempotencyKey(), () -> {
      String id = call.getVolumeId();
      IdRules.requireBounded("volume_id", id);
      // The inspector names files after the id: only an id of the backend's form reaches it.
      if (backend.volumeId(id) instanceof IdShape.NotOurs(String rule)) {
        throw CsiException.invalid("volume_id '" + id + "' is not of this backend's form: " + rule);
      }
      return nodeLayers.apply(id);
    });
  }

  @Override
  public void replicaState(ReplicaStateCall call, StreamObserver<ReplicaStateAnswer> out) {
    reading(out, call.getIdempotencyKey(), () -> {
      Replication.ReplicaState state = replication().replicaState(replicaOf(call.getVolumeId()));
      ReplicaStateAnswer.Builder answer = ReplicaStateAnswer.newBuilder().setNode(self).setExists(state.exists());
      state.newest().ifPresent(p -> answer.setNewestSnapshot(p.name()).setNewestGuid(p.guid()));
      state.resumeToken().ifPresent(answer::setResumeToken);
      return answer.build();
    });
  }

  @Override
  public StreamObserver<ReplicateChunk> replicate(StreamObserver<ReplicateAnswer> out) {
    Optional<Replication> replication = backend.replication();
    if (replication.isEmpty()) {
      out.onError(Status.UNIMPLEMENTED.withDescription(noReplication()).asRuntimeException());
      return new StreamObserver<>() {
        @Override
        public void onNext(ReplicateChunk value) {}

        @Override
        public void onError(Throwable t) {}

        @Override
        public void onCompleted() {}
      };
    }
    return new ReplicaReceiver(replication.get(), receiving, this::replicaOf, (ServerCallStreamObserver<ReplicateAnswer>) out);
  }

  @Override
  public void deleteReplica(DeleteReplicaCall call, StreamObserver<DeleteReplicaAnswer> out) {
    changing(out, call.getIdempotencyKey(), call, () -> DeleteReplicaAnswer.newBuilder()
        .setDeleted(replication().deleteReplica(replicaOf(call.getVolumeId()))).build());
  }

  private Replication replication() {
    return backend.replication().orElseThrow(() -> Status.UNIMPLEMENTED.withDescription(noReplication())
        .asRuntimeException());
  }

  private String noReplication() {
    return "node " + self + "'s backend does not replicate volumes";
  }

  /**
   * A replica is of another node's volume, and only that node (its certificate names it) reads,
   * writes or deletes it here.
   */
  String replicaOf(String volumeId) {
    IdRules.requireBounded("volume_id", volumeId);
    if (backend.volumeId(volumeId) instanceof IdShape.NotOurs(String rule)) {
      throw CsiException.invalid("volume_id '" + volumeId + "' is not of this backend's form: " + rule);
    }
    String owner = Routing.ownerIfOurs(backend, volumeId, true).orElseThrow();
    if (owner.equals(self)) {
      throw CsiException.failedPrecondition("volume_id " + volumeId + " is node " + self
          + "'s own: a node holds no replica of its own volumes");
    }
    List<String> caller = Optional.ofNullable(PeerServer.CALLER.get()).orElse(List.of());
    if (!caller.contains(owner)) {
      throw Status.PERMISSION_DENIED.withDescription("volume_id " + volumeId + " belongs to node " + owner
          + ", and only that node's certificate may act on its replica; the caller's names " + caller)
          .asRuntimeException();
    }
    return volumeId;
  }

  private void requireOwnVolume(String id) {
    requireOwn("volume_id", id, Routing.ownerIfOurs(backend, id, true));
  }

  /** Refuses an id that names another node: its pool is that node's alone. */
  private void requireOwn(String field, String id, Optional<String> owner) {
    if (owner.isPresent() && !owner.get().equals(self)) {
      throw Status.FAILED_PRECONDITION.withDescription(field + " " + id + " belongs to node " + owner.get()
          + ", and this is node " + self + ": a node acts only on its own storage").asRuntimeException();
    }
  }

  private <R> void changing(StreamObserver<R> out, String key, Message call, Supplier<R> body) {
    Rpc.unary(out, () -> {
      requireDeadlineAndKey(key);
      return replays.once(key, call, body);
    });
  }

  private <R> void reading(StreamObserver<R> out, String key, Supplier<R> body) {
    Rpc.unary(out, () -> {
      requireDeadlineAndKey(key);
      return body.get();
    });
  }

  private static void requireDeadlineAndKey(String key) {
    if (Context.current().getDeadline() == null) {
      throw Status.INVALID_ARGUMENT.withDescription("a peer call must carry a deadline").asRuntimeException();
    }
    if (key.isEmpty() || key.length() > KEY_MAX) {
      throw Status.INVALID_ARGUMENT.withDescription("idempotency_key is required, at most " + KEY_MAX + " characters")
          .asRuntimeException();
    }
  }
}
