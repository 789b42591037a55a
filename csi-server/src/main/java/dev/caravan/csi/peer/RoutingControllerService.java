package dev.caravan.csi.peer;

import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Topology;
import dev.caravan.csi.peer.v1.CreateSnapshotCall;
import dev.caravan.csi.peer.v1.CreateVolumeCall;
import dev.caravan.csi.peer.v1.DeleteSnapshotCall;
import dev.caravan.csi.peer.v1.DeleteVolumeCall;
import dev.caravan.csi.peer.v1.ExpandVolumeCall;
import dev.caravan.csi.peer.v1.GetCapacityCall;
import dev.caravan.csi.peer.v1.GetVolumeCall;
import dev.caravan.csi.peer.v1.ListSnapshotsCall;
import dev.caravan.csi.peer.v1.ListVolumesCall;
import dev.caravan.csi.peer.v1.PeerGrpc;
import dev.caravan.csi.peer.v1.PlacementQuery;
import dev.caravan.csi.peer.v1.PlacementReport;
import dev.caravan.csi.peer.v1.ValidateVolumeCall;
import dev.caravan.csi.service.ControllerService;
import dev.caravan.csi.service.Pages;
import dev.caravan.csi.service.Rpc;
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
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiFunction;
import java.util.function.Supplier;

/**
 * The controller service of a plugin with peers: each call about a volume or snapshot runs on the node
 * whose id it carries ({@link ControllerBackend#volumeOwner}), here through the plain {@link
 * ControllerService} or on the owner through its peer endpoint. No node ever acts on another's
 * storage: when the owner cannot be reached the call is UNAVAILABLE, naming it and what to do.
 *
 * <p>CreateVolume goes to the name's {@link Coordinator}, one node per name, which places creates of
 * that name one at a time. It first asks every node whether it already holds a volume of that name,
 * so a retry that lands on another instance returns the volume the first call made, whichever node
 * has it (one unreachable node makes the create UNAVAILABLE: it might hold the name). Else the node is
 * the one an unfinished earlier attempt went to ({@link NameClaims}), else the content source's, else
 * the {@code host} parameter's, else ({@code host=auto}) {@link Placement}'s.
 * ListVolumes and ListSnapshots merge every node's entries, sorted by id and paged like a single
 * node's list, so tokens stay stable; one unreachable node makes the list UNAVAILABLE, never silently
 * shorter.
 */
public final class RoutingControllerService extends ControllerGrpc.ControllerImplBase {
  private final ControllerService local;
  private final ControllerBackend backend;
  private final String self;
  private final long reserveBytes;
  private final PeerClients clients;
  private final NameClaims claims;
  private final Duration lockWait;
  /** Serialize the placing of one name on its coordinator (striped: a few names share a lock). */
  private final ReentrantLock[] nameLocks = new ReentrantLock[64];

  RoutingControllerService(ControllerService local, ControllerBackend backend, String self, long reserveBytes,
      PeerClients clients, NameClaims claims, Duration lockWait) {
    this.local = local;
    this.backend = backend;
    this.self = self;
    this.reserveBytes = reserveBytes;
    this.clients = clients;
    this.claims = claims;
    this.lockWait = lockWait;
    for (int i = 0; i < nameLocks.length; i++) {
      nameLocks[i] = new ReentrantLock();
    }
  }

  @Override
  public void createVolume(CreateVolumeRequest req, StreamObserver<CreateVolumeResponse> out) {
    Rpc.unary(out, () -> {
      if (req.getName().isEmpty()) {
        return InProcess.call(local::createVolume, withHost(req, self)); // answered there: name is required
      }
      host(req);
      String coordinator = Coordinator.of(req.getName(), nodes());
      if (coordinator.equals(self)) {
        return place(req);
      }
      return clients.client(coordinator).call(coordinatorDown(coordinator, req.getName()), (stub, key) ->
          stub.placeVolume(CreateVolumeCall.newBuilder().setIdempotencyKey(key).setRequest(req).build()));
    });
  }

  /** The {@code host} parameter: {@code auto} or a node id; INVALID_ARGUMENT otherwise. */
  private static String host(CreateVolumeRequest req) {
    String host = req.getParametersMap().getOrDefault(Routing.HOST, Routing.AUTO);
    if (!host.equals(Routing.AUTO) && !NodeNames.valid(host)) {
      throw CsiException.invalid("parameters." + Routing.HOST + " must be 'auto' or a node id (" + NodeNames.RULE
          + ")");
    }
    return host;
  }

  /** This node and its peers. */
  private Set<String> nodes() {
    Set<String> nodes = new TreeSet<>(clients.peers().current().keySet());
    nodes.add(self);
    return nodes;
  }

  /**
   * The coordinator's part of CreateVolume (this node coordinates the name): under the name's lock,
   * the volume of that name wherever it is; else the node a lost earlier attempt was sent to ({@link
   * NameClaims}); else a new choice, recorded before the owner is asked to create, and forgotten once
   * it has answered for sure.
   */
  CreateVolumeResponse place(CreateVolumeRequest req) {
    String name = req.getName();
    String host = host(req);
    Set<String> nodes = nodes();
    String coordinator = Coordinator.of(name, nodes);
    if (!coordinator.equals(self)) {
      // Never decide for a name another node coordinates: two deciders could choose two owners.
      throw new CsiException(CsiException.Kind.UNAVAILABLE, "this node (" + self + ") was asked to place the"
          + " volume named " + name + ", which by its peer set " + nodes + " node " + coordinator + " coordinates:"
          + " the instances do not agree on the peer set yet (a node joining or leaving); retry");
    }
    ReentrantLock lock = nameLocks[Math.floorMod(name.hashCode(), nameLocks.length)];
    try {
      if (!lock.tryLock(lockWait.toMillis(), TimeUnit.MILLISECONDS)) {
        throw new CsiException(CsiException.Kind.ABORTED, "another CreateVolume of the name " + name + " is being"
            + " placed (node " + self + " coordinates it); retry");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CsiException(CsiException.Kind.ABORTED, "interrupted while waiting to place " + name);
    }
    boolean recorded = false;
    try {
      List<PlacementReport> reports = survey(req);
      boolean exists = reports.stream().anyMatch(r -> !r.getExistingVolumeId().isEmpty());
      Optional<String> earlier = exists ? Optional.empty() : claims.owner(name);
      String owner;
      if (earlier.isPresent()) {
        owner = earlier.get();
        if (!host.equals(Routing.AUTO) && !host.equals(owner)) {
          throw new CsiException(CsiException.Kind.ABORTED, "an earlier CreateVolume of the name " + name + " was"
              + " sent to node " + owner + " and has not been answered for sure; it is finished there by a retry"
              + " with parameters." + Routing.HOST + " auto or " + owner + ", not " + host);
        }
      } else {
        owner = owner(req, host, reports);
      }
      if (exists) {
        claims.release(name); // a record left by a crash after its volume was made
      } else {
        if (earlier.isEmpty()) {
          claims.claim(name, owner);
        }
        recorded = true;
      }
      CreateVolumeResponse made = createOn(owner, req);
      if (recorded) {
        claims.release(name);
      }
      return made;
    } catch (CsiException e) {
      if (recorded && definite(Rpc.status(e).getCode())) {
        claims.release(name);
      }
      throw e;
    } catch (StatusRuntimeException e) {
      if (recorded && definite(e.getStatus().getCode())) {
        claims.release(name);
      }
      throw e;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Whether the owner's answer says for sure that it made nothing to finish: a refusal of the request.
   * UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, INTERNAL and UNKNOWN may leave a volume half made there,
   * and ALREADY_EXISTS says it holds something of that name.
   */
  private static boolean definite(Status.Code code) {
    return switch (code) {
      case INVALID_ARGUMENT, NOT_FOUND, OUT_OF_RANGE, FAILED_PRECONDITION, RESOURCE_EXHAUSTED, UNIMPLEMENTED,
          PERMISSION_DENIED, UNAUTHENTICATED -> true;
      default -> false;
    };
  }

  private CreateVolumeResponse createOn(String owner, CreateVolumeRequest req) {
    CreateVolumeRequest forOwner = withHost(req, owner);
    if (owner.equals(self)) {
      return InProcess.call(local::createVolume, forOwner);
    }
    return clients.client(owner).call(ownerDown(owner, "the volume named " + req.getName()), (stub, key) ->
        stub.createVolume(CreateVolumeCall.newBuilder().setIdempotencyKey(key).setRequest(forOwner).build()));
  }

  private static String coordinatorDown(String node, String name) {
    return "Node " + node + " decides where a volume named " + name + " goes (one node per name, so that two"
        + " creates of it never land on two nodes); bring the plugin on " + node + " back, or take " + node
        + " out of the peer set if it is gone, then retry.";
  }

  private String owner(CreateVolumeRequest req, String host, List<PlacementReport> reports) {
    Optional<PlacementReport> holder = reports.stream().filter(r -> !r.getExistingVolumeId().isEmpty()).findFirst();
    if (holder.isPresent()) {
      String node = holder.get().getNode();
      if (!host.equals(Routing.AUTO) && !host.equals(node)) {
        throw CsiException.alreadyExists("name '" + req.getName() + "' already exists as volume "
            + holder.get().getExistingVolumeId() + " on node " + node + ", not on node " + host
            + " (parameters." + Routing.HOST + ")");
      }
      return node;
    }
    Optional<String> sourceOwner = sourceOwner(req);
    if (sourceOwner.isPresent()) {
      if (!host.equals(Routing.AUTO) && !host.equals(sourceOwner.get())) {
        throw CsiException.invalid("volume_content_source is on node " + sourceOwner.get() + ", and a volume made"
            + " from it is made there: parameters." + Routing.HOST + " must be auto or " + sourceOwner.get()
            + ", not " + host);
      }
      return sourceOwner.get();
    }
    if (!host.equals(Routing.AUTO)) {
      if (reports.stream().noneMatch(r -> r.getNode().equals(host))) {
        throw CsiException.invalid("parameters." + Routing.HOST + " names node " + host + ", which is neither this"
            + " node (" + self + ") nor a peer " + new TreeSet<>(clients.peers().current().keySet()));
      }
      return host;
    }
    List<Topology> requisite = req.getAccessibilityRequirements().getRequisiteList().stream()
        .map(t -> new Topology(t.getSegmentsMap())).toList();
    return Placement.choose(reports, requisite, Math.max(0, req.getCapacityRange().getRequiredBytes()));
  }

  private Optional<String> sourceOwner(CreateVolumeRequest req) {
    if (!req.hasVolumeContentSource()) {
      return Optional.empty();
    }
    VolumeContentSource src = req.getVolumeContentSource();
    return switch (src.getTypeCase()) {
      case SNAPSHOT -> Routing.ownerIfOurs(backend, src.getSnapshot().getSnapshotId(), false);
      case VOLUME -> Routing.ownerIfOurs(backend, src.getVolume().getVolumeId(), true);
      case TYPE_NOT_SET -> Optional.empty();
    };
  }

  /** Every node's placement report, this one's included; UNAVAILABLE when a peer cannot answer. */
  private List<PlacementReport> survey(CreateVolumeRequest req) {
    List<PlacementReport> reports = new ArrayList<>();
    reports.add(NodeReport.of(backend, self, reserveBytes, req.getName(), req.getParametersMap()));
    for (String node : new TreeSet<>(clients.peers().current().keySet())) {
      reports.add(clients.client(node).call("A volume name is looked up on every node before a volume is made,"
          + " so that a retried CreateVolume never makes a second one; bring the plugin on " + node + " back, or"
          + " take " + node + " out of the peer set if it is gone, then retry.", (stub, key) ->
          stub.placement(PlacementQuery.newBuilder().setIdempotencyKey(key).setVolumeName(req.getName())
              .putAllParameters(req.getParametersMap()).build())));
    }
    return reports;
  }

  /** The request as the owner must see it: {@code host} names the owner, for backends that read it. */
  private CreateVolumeRequest withHost(CreateVolumeRequest req, String owner) {
    Map<String, String> params = new HashMap<>(req.getParametersMap());
    if (backend.knownParameters().contains(Routing.HOST)) {
      params.put(Routing.HOST, owner);
    } else {
      params.remove(Routing.HOST);
    }
    return req.toBuilder().clearParameters().putAllParameters(params).build();
  }

  private static String ownerDown(String node, String what) {
    return what + " is on node " + node + ", and only that node acts on its storage. Bring the caravan plugin on "
        + node + " back (check its peer address and certificate), then retry; if " + node + " is gone for good,"
        + " its volumes went with it: deregister them (nomad volume deregister).";
  }

  @Override
  public void deleteVolume(DeleteVolumeRequest req, StreamObserver<DeleteVolumeResponse> out) {
    routed(out, () -> Routing.ownerIfOurs(backend, req.getVolumeId(), true), "volume " + req.getVolumeId(),
        () -> InProcess.call(local::deleteVolume, req),
        (stub, key) -> stub.deleteVolume(DeleteVolumeCall.newBuilder().setIdempotencyKey(key).setRequest(req).build()));
  }

  @Override
  public void controllerExpandVolume(ControllerExpandVolumeRequest req,
      StreamObserver<ControllerExpandVolumeResponse> out) {
    routed(out, () -> Routing.ownerIfOurs(backend, req.getVolumeId(), true), "volume " + req.getVolumeId(),
        () -> InProcess.call(local::controllerExpandVolume, req),
        (stub, key) -> stub.expandVolume(ExpandVolumeCall.newBuilder().setIdempotencyKey(key).setRequest(req).build()));
  }

  @Override
  public void createSnapshot(CreateSnapshotRequest req, StreamObserver<CreateSnapshotResponse> out) {
    routed(out, () -> Routing.ownerIfOurs(backend, req.getSourceVolumeId(), true),
        "volume " + req.getSourceVolumeId(),
        () -> InProcess.call(local::createSnapshot, req),
        (stub, key) ->
            stub.createSnapshot(CreateSnapshotCall.newBuilder().setIdempotencyKey(key).setRequest(req).build()));
  }

  @Override
  public void deleteSnapshot(DeleteSnapshotRequest req, StreamObserver<DeleteSnapshotResponse> out) {
    routed(out, () -> Routing.ownerIfOurs(backend, req.getSnapshotId(), false), "snapshot " + req.getSnapshotId(),
        () -> InProcess.call(local::deleteSnapshot, req),
        (stub, key) ->
            stub.deleteSnapshot(DeleteSnapshotCall.newBuilder().setIdempotencyKey(key).setRequest(req).build()));
  }

  @Override
  public void controllerGetVolume(ControllerGetVolumeRequest req, StreamObserver<ControllerGetVolumeResponse> out) {
    routed(out, () -> Routing.ownerIfOurs(backend, req.getVolumeId(), true), "volume " + req.getVolumeId(),
        () -> InProcess.call(local::controllerGetVolume, req),
        (stub, key) -> stub.getVolume(GetVolumeCall.newBuilder().setIdempotencyKey(key).setRequest(req).build()));
  }

  @Override
  public void validateVolumeCapabilities(ValidateVolumeCapabilitiesRequest req,
      StreamObserver<ValidateVolumeCapabilitiesResponse> out) {
    routed(out, () -> Routing.ownerIfOurs(backend, req.getVolumeId(), true), "volume " + req.getVolumeId(),
        () -> InProcess.call(local::validateVolumeCapabilities, req),
        (stub, key) ->
            stub.validateVolume(ValidateVolumeCall.newBuilder().setIdempotencyKey(key).setRequest(req).build()));
  }

  @Override
  public void getCapacity(GetCapacityRequest req, StreamObserver<GetCapacityResponse> out) {
    Supplier<Optional<String>> node = () -> req.hasAccessibleTopology()
        ? Optional.ofNullable(req.getAccessibleTopology().getSegmentsMap().get(Topology.NODE_KEY))
            .filter(n -> clients.peers().current().containsKey(n))
        : Optional.empty();
    routed(out, node, "the capacity asked for",
        () -> InProcess.call(local::getCapacity, req),
        (stub, key) -> stub.getCapacity(GetCapacityCall.newBuilder().setIdempotencyKey(key).setRequest(req).build()));
  }

  @Override
  public void listVolumes(ListVolumesRequest req, StreamObserver<ListVolumesResponse> out) {
    Rpc.unary(out, () -> {
      ListVolumesRequest all = ListVolumesRequest.getDefaultInstance();
      List<ListVolumesResponse.Entry> entries =
          new ArrayList<>(InProcess.call(local::listVolumes, all).getEntriesList());
      for (String node : new TreeSet<>(clients.peers().current().keySet())) {
        entries.addAll(clients.client(node).call(listDown(node), (stub, key) -> stub.listVolumes(
            ListVolumesCall.newBuilder().setIdempotencyKey(key).setRequest(all).build())).getEntriesList());
      }
      entries.sort(Comparator.comparing(e -> e.getVolume().getVolumeId()));
      Pages.Page<ListVolumesResponse.Entry> page =
          Pages.page(entries, e -> e.getVolume().getVolumeId(), req.getMaxEntries(), req.getStartingToken());
      return ListVolumesResponse.newBuilder().addAllEntries(page.entries()).setNextToken(page.nextToken()).build();
    });
  }

  @Override
  public void listSnapshots(ListSnapshotsRequest req, StreamObserver<ListSnapshotsResponse> out) {
    Rpc.unary(out, () -> {
      ListSnapshotsRequest all = ListSnapshotsRequest.newBuilder()
          .setSnapshotId(req.getSnapshotId()).setSourceVolumeId(req.getSourceVolumeId()).build();
      List<ListSnapshotsResponse.Entry> entries =
          new ArrayList<>(InProcess.call(local::listSnapshots, all).getEntriesList());
      for (String node : new TreeSet<>(clients.peers().current().keySet())) {
        entries.addAll(clients.client(node).call(listDown(node), (stub, key) -> stub.listSnapshots(
            ListSnapshotsCall.newBuilder().setIdempotencyKey(key).setRequest(all).build())).getEntriesList());
      }
      entries.sort(Comparator.comparing(e -> e.getSnapshot().getSnapshotId()));
      Pages.Page<ListSnapshotsResponse.Entry> page =
          Pages.page(entries, e -> e.getSnapshot().getSnapshotId(), req.getMaxEntries(), req.getStartingToken());
      return ListSnapshotsResponse.newBuilder().addAllEntries(page.entries()).setNextToken(page.nextToken()).build();
    });
  }

  private static String listDown(String node) {
    return "A list leaves no node out, so that nothing looks deleted that is not; bring the plugin on " + node
        + " back, or take " + node + " out of the peer set if it is gone, then list again.";
  }

  @Override
  public void controllerGetCapabilities(ControllerGetCapabilitiesRequest req,
      StreamObserver<ControllerGetCapabilitiesResponse> out) {
    local.controllerGetCapabilities(req, out);
  }

  @Override
  public void controllerPublishVolume(ControllerPublishVolumeRequest req,
      StreamObserver<ControllerPublishVolumeResponse> out) {
    local.controllerPublishVolume(req, out);
  }

  @Override
  public void controllerUnpublishVolume(ControllerUnpublishVolumeRequest req,
      StreamObserver<ControllerUnpublishVolumeResponse> out) {
    local.controllerUnpublishVolume(req, out);
  }

  /** Runs the call here when {@code owner} is empty or this node, else on the owner. */
  private <R> void routed(StreamObserver<R> out, Supplier<Optional<String>> owner, String what, Supplier<R> here,
      BiFunction<PeerGrpc.PeerBlockingStub, String, R> there) {
    Rpc.unary(out, () -> {
      Optional<String> node = owner.get().filter(n -> !n.equals(self));
      if (node.isEmpty()) {
        return here.get();
      }
      return clients.client(node.get()).call(ownerDown(node.get(), what), there);
    });
  }
}
