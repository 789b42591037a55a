package dev.caravan.csi.peer;

import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.ReplicationSettings;
import dev.caravan.csi.backend.VolumeInfo;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Topology;
import dev.caravan.csi.peer.v1.CreateSnapshotCall;
import dev.caravan.csi.peer.v1.CreateVolumeCall;
import dev.caravan.csi.peer.v1.DeleteSnapshotCall;
import dev.caravan.csi.peer.v1.DeleteVolumeCall;
import dev.caravan.csi.peer.v1.ReleaseNameAnswer;
import dev.caravan.csi.peer.v1.ReleaseNameCall;
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
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
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
 * <p>CreateVolume goes to the name's home ({@link Coordinator}: one node per name, by rendezvous
 * hashing over the view, this node and its peers), which places creates of that name one at a time
 * under its lock and keeps a lasting claim of where the name's volume is ({@link NameClaims}). A name
 * with a claim goes to the claimed owner only (its create is idempotent): a retry that lands on another
 * instance returns the volume the first call made. A name without one is placed by the content
 * source's node, else the {@code host} parameter's, else ({@code host=auto}) by {@link Placement} among
 * the nodes that answer; the claim is written, and synced, before the owner is asked. A home decides
 * alone only once it has read every node's names under the view they all share ({@link
 * HomeAuthority}); until then it first asks every node whether it holds the name. So a node that is
 * down blocks only the creates of the names it homes (UNAVAILABLE naming it) or holds, and of the names
 * of homes that have not read it yet under the current view. When the peer set changes, names move
 * only to or from the nodes that joined or left, and every home reads every node again before it
 * decides alone; meanwhile a node whose view differs is refused (UNAVAILABLE: the nodes do not agree on
 * the peer set yet).
 * ListVolumes and ListSnapshots merge every node's entries, sorted by id and paged like a single
 * node's list, so tokens stay stable; one unreachable node makes the list UNAVAILABLE, never silently
 * shorter.
 */
public final class RoutingControllerService extends ControllerGrpc.ControllerImplBase {
  private static final System.Logger LOG = System.getLogger(RoutingControllerService.class.getName());
  /** How long a home waits for a node's capacity before placing without it. */
  private static final Duration CAPACITY_WAIT = Duration.ofSeconds(2);

  private final ControllerService local;
  private final ControllerBackend backend;
  private final String self;
  private final long reserveBytes;
  private final PeerClients clients;
  private final NameClaims claims;
  private final NameLocks locks;
  private final HomeAuthority authority;
  private final ExecutorService asks = Executors.newVirtualThreadPerTaskExecutor();
  private final Optional<Replicator> replicator;
  private final Optional<ReplicationScheduler> scheduler;

  RoutingControllerService(ControllerService local, ControllerBackend backend, String self, long reserveBytes,
      PeerClients clients, NameClaims claims, NameLocks locks, HomeAuthority authority) {
    this.local = local;
    this.backend = backend;
    this.self = self;
    this.reserveBytes = reserveBytes;
    this.clients = clients;
    this.claims = claims;
    this.locks = locks;
    this.authority = authority;
    this.replicator = backend.replication().map(r -> new Replicator(r, clients));
    this.scheduler = backend.replication().map(r -> new ReplicationScheduler(r, replicator.orElseThrow()::replicate,
        Clock.systemUTC()));
  }

  Optional<Replicator> replicator() {
    return replicator;
  }

  Optional<ReplicationScheduler> scheduler() {
    return scheduler;
  }

  @Override
  public void createVolume(CreateVolumeRequest req, StreamObserver<CreateVolumeResponse> out) {
    Rpc.unary(out, () -> {
      if (req.getName().isEmpty()) {
        return InProcess.call(local::createVolume, withHost(req, self)); // answered there: name is required
      }
      host(req);
      HomeAuthority.View v = authority.view();
      String home = v.home(req.getName());
      if (home.equals(self)) {
        return place(req, v);
      }
      return clients.client(home).call(homeDown(home, req.getName()), (stub, key) ->
          stub.placeVolume(CreateVolumeCall.newBuilder().setIdempotencyKey(key).setRequest(req)
              .setView(v.proto(self)).build()));
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

  /** The home's part of a CreateVolume another node sent it: refused when their views differ. */
  CreateVolumeResponse place(CreateVolumeCall call) {
    return place(call.getRequest(), authority.check(call.getView()));
  }

  /**
   * The home's part of CreateVolume (this node is the name's home under {@code v}), under the name's
   * lock: the owner the name's claim records, else (deciding alone, or after asking every node) a new
   * choice, claimed before the owner is asked to create, and kept once it has made the volume.
   */
  private CreateVolumeResponse place(CreateVolumeRequest req, HomeAuthority.View v) {
    String name = req.getName();
    String host = host(req);
    String home = v.home(name);
    if (!home.equals(self)) {
      // Never decide for a name another node homes: two deciders could choose two owners.
      throw new CsiException(CsiException.Kind.UNAVAILABLE, "this node (" + self + ") was asked to place the"
          + " volume named " + name + ", which by its peer set " + v.nodes() + " node " + home + " homes:"
          + " the instances do not agree on the peer set yet (a node joining or leaving); retry");
    }
    ReentrantLock lock = locks.lock(name, self);
    try {
      Decision d = authority.authoritative(v) ? alone(req, host, v) : surveyed(req, host, v);
      boolean fresh = claims.owner(name).isEmpty();
      claims.claim(name, d.owner());
      try {
        return createOn(d.owner(), d.ownerGeneration(), req, v);
      } catch (RuntimeException e) {
        // A refusal says for sure that nothing was made: a claim this call wrote for a name no node holds goes.
        if (fresh && !d.held() && definite(code(e))) {
          claims.release(name);
        }
        throw e;
      }
    } finally {
      lock.unlock();
    }
  }

  /** Where a create goes: the owner, its view generation as the home knows it (0: unknown), and whether it holds the name already. */
  private record Decision(String owner, long ownerGeneration, boolean held) {}

  /** The home decides alone: its claim, else a new choice among the nodes that answer. */
  private Decision alone(CreateVolumeRequest req, String host, HomeAuthority.View v) {
    String name = req.getName();
    Optional<String> claimed = claims.owner(name);
    if (claimed.isPresent()) {
      String owner = claimed.get();
      if (host.equals(Routing.AUTO) || host.equals(owner)) {
        return new Decision(owner, authority.generationOf(owner), false);
      }
      // Another host asked for: only if the claimed owner holds nothing of that name (it was never made, or deleted).
      PlacementReport r = report(owner, req, v, true, ownerDown(owner, "the volume named " + name));
      if (!r.getExistingVolumeId().isEmpty()) {
        throw alreadyElsewhere(name, r, host);
      }
    }
    Optional<String> source = sourceOwner(req, host);
    if (source.isPresent()) {
      return new Decision(source.get(), authority.generationOf(source.get()), false);
    }
    if (!host.equals(Routing.AUTO)) {
      requireKnown(host, v);
      return new Decision(host, authority.generationOf(host), false);
    }
    List<PlacementReport> live = capacities(req, v);
    String owner = Placement.choose(live, requisite(req), Math.max(0, req.getCapacityRange().getRequiredBytes()));
    return new Decision(owner, authority.generationOf(owner), false);
  }

  /** The home asks every node for the name first (it has not read every node under this view yet). */
  private Decision surveyed(CreateVolumeRequest req, String host, HomeAuthority.View v) {
    List<PlacementReport> reports = survey(req, v);
    Optional<PlacementReport> holder = reports.stream().filter(r -> !r.getExistingVolumeId().isEmpty()).findFirst();
    if (holder.isPresent()) {
      if (!host.equals(Routing.AUTO) && !host.equals(holder.get().getNode())) {
        throw alreadyElsewhere(req.getName(), holder.get(), host);
      }
      return new Decision(holder.get().getNode(), holder.get().getGeneration(), true);
    }
    // No node holds it: a claim left by a create lost before its owner recorded anything still decides.
    Optional<String> claimed = claims.owner(req.getName());
    String owner;
    if (claimed.isPresent() && (host.equals(Routing.AUTO) || host.equals(claimed.get()))) {
      owner = claimed.get();
    } else {
      owner = sourceOwner(req, host).orElseGet(() -> {
        if (!host.equals(Routing.AUTO)) {
          requireKnown(host, v);
          return host;
        }
        return Placement.choose(reports, requisite(req), Math.max(0, req.getCapacityRange().getRequiredBytes()));
      });
    }
    long generation = reports.stream().filter(r -> r.getNode().equals(owner)).mapToLong(PlacementReport::getGeneration)
        .findFirst().orElse(0);
    return new Decision(owner, generation, false);
  }

  private static CsiException alreadyElsewhere(String name, PlacementReport holder, String host) {
    return CsiException.alreadyExists("name '" + name + "' already exists as volume " + holder.getExistingVolumeId()
        + " on node " + holder.getNode() + ", not on node " + host + " (parameters." + Routing.HOST + ")");
  }

  private void requireKnown(String host, HomeAuthority.View v) {
    if (!v.nodes().contains(host)) {
      throw CsiException.invalid("parameters." + Routing.HOST + " names node " + host + ", which is neither this"
          + " node (" + self + ") nor a peer " + new TreeSet<>(clients.peers().current().keySet()));
    }
  }

  private static List<Topology> requisite(CreateVolumeRequest req) {
    return req.getAccessibilityRequirements().getRequisiteList().stream()
        .map(t -> new Topology(t.getSegmentsMap())).toList();
  }

  private static Status.Code code(RuntimeException e) {
    if (e instanceof CsiException c) {
      return Rpc.status(c).getCode();
    }
    return e instanceof StatusRuntimeException s ? s.getStatus().getCode() : Status.Code.UNKNOWN;
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

  private CreateVolumeResponse createOn(String owner, long ownerGeneration, CreateVolumeRequest req,
      HomeAuthority.View v) {
    CreateVolumeRequest forOwner = withReplicas(withHost(req, owner), owner, v);
    try {
      if (owner.equals(self)) {
        return authority.admitCreate(v.proto(self), v.generation(), () -> createHere(forOwner));
      }
      return clients.client(owner).call(ownerDown(owner, "the volume named " + req.getName()), (stub, key) ->
          stub.createVolume(CreateVolumeCall.newBuilder().setIdempotencyKey(key).setRequest(forOwner)
              .setView(v.proto(self)).setOwnerGeneration(ownerGeneration).build()));
    } catch (RuntimeException e) {
      if (HomeAuthority.disagreement(e)) {
        authority.drop("node " + owner + " has another view");
      }
      throw e;
    }
  }

  private static String homeDown(String node, String name) {
    return "Node " + node + " is the home of the volume name " + name + ": it decides where a volume of that name"
        + " goes (one node per name, so that two creates of it never land on two nodes); bring the plugin on " + node
        + " back, or take " + node + " out of the peer set if it is gone for good, then retry.";
  }

  /** The node a content source lives on, which a volume made from it is made on; checked against {@code host}. */
  private Optional<String> sourceOwner(CreateVolumeRequest req, String host) {
    if (!req.hasVolumeContentSource()) {
      return Optional.empty();
    }
    VolumeContentSource src = req.getVolumeContentSource();
    Optional<String> owner = switch (src.getTypeCase()) {
      case SNAPSHOT -> Routing.ownerIfOurs(backend, src.getSnapshot().getSnapshotId(), false);
      case VOLUME -> Routing.ownerIfOurs(backend, src.getVolume().getVolumeId(), true);
      case TYPE_NOT_SET -> Optional.empty();
    };
    if (owner.isPresent() && !host.equals(Routing.AUTO) && !host.equals(owner.get())) {
      throw CsiException.invalid("volume_content_source is on node " + owner.get() + ", and a volume made"
          + " from it is made there: parameters." + Routing.HOST + " must be auto or " + owner.get()
          + ", not " + host);
    }
    return owner;
  }

  /** One node's report; {@code named}: with whether it holds the name (read after its running creates). */
  private PlacementReport report(String node, CreateVolumeRequest req, HomeAuthority.View v, boolean named,
      String recovery) {
    String name = named ? req.getName() : "";
    if (node.equals(self)) {
      return named
          ? authority.listing(() -> NodeReport.of(backend, self, reserveBytes, name, req.getParametersMap(),
              v.generation()))
          : NodeReport.of(backend, self, reserveBytes, name, req.getParametersMap(), v.generation());
    }
    return clients.client(node).call(recovery, (stub, key) -> (named ? stub
        : stub.withDeadlineAfter(CAPACITY_WAIT.toMillis(), TimeUnit.MILLISECONDS))
        .placement(PlacementQuery.newBuilder().setIdempotencyKey(key).setVolumeName(name)
            .putAllParameters(req.getParametersMap()).setView(v.proto(self)).build()));
  }

  /** The capacity of every node that answers, asked at once; a node that does not is left out. */
  private List<PlacementReport> capacities(CreateVolumeRequest req, HomeAuthority.View v) {
    Map<String, Future<PlacementReport>> asked = new TreeMap<>();
    for (String node : v.nodes()) {
      asked.put(node, asks.submit(() -> report(node, req, v, false, "")));
    }
    List<PlacementReport> live = new ArrayList<>();
    for (Map.Entry<String, Future<PlacementReport>> e : asked.entrySet()) {
      try {
        live.add(e.getValue().get());
      } catch (ExecutionException ex) {
        if (ex.getCause() instanceof RuntimeException r && HomeAuthority.disagreement(r)) {
          authority.drop("node " + e.getKey() + " has another view");
          throw r;
        }
        LOG.log(System.Logger.Level.DEBUG, "node {0} left out of placement: {1}", e.getKey(),
            ex.getCause().getMessage());
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
        throw new CsiException(CsiException.Kind.ABORTED, "interrupted while asking the nodes' capacity");
      }
    }
    return live;
  }

  /** Every node's placement report, this one's included; UNAVAILABLE when a node cannot answer. */
  private List<PlacementReport> survey(CreateVolumeRequest req, HomeAuthority.View v) {
    List<PlacementReport> reports = new ArrayList<>();
    for (String node : v.nodes()) {
      reports.add(report(node, req, v, true, "A home that has not yet read every node's names under the current"
          + " peer set asks every node for a name before a volume is made, so that a retried CreateVolume never"
          + " makes a second one; bring the plugin on " + node + " back, or take " + node + " out of the peer"
          + " set if it is gone for good, then retry."));
    }
    return reports;
  }

  void close() {
    scheduler.ifPresent(ReplicationScheduler::close);
    asks.shutdownNow();
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

  /**
   * The request as the owner must see it when it asks for replicas: the replica nodes checked against
   * the peer set (known, not the owner, enough of them), or chosen by the placement reports (most free
   * bytes first) when the request names none.
   */
  private CreateVolumeRequest withReplicas(CreateVolumeRequest req, String owner, HomeAuthority.View v) {
    if (!backend.knownParameters().contains(ReplicationSettings.REPLICAS)) {
      return req;
    }
    ReplicationSettings r = ReplicationSettings.parse(req.getParametersMap());
    if (!r.on()) {
      return req;
    }
    Set<String> others = new TreeSet<>(v.nodes());
    others.remove(owner);
    r.requireNodes(owner, others);
    if (r.nodes().isEmpty()) {
      List<PlacementReport> reports = capacities(req, v).stream().filter(p -> !p.getNode().equals(owner)).toList();
      List<String> chosen = Placement.rank(reports).stream().limit(r.replicas()).toList();
      if (chosen.size() < r.replicas()) {
        throw new CsiException(CsiException.Kind.UNAVAILABLE, "parameters." + ReplicationSettings.REPLICAS + " "
            + r.replicas() + ": only " + chosen + " of the other nodes " + others + " answer; retry once they do,"
            + " or name the nodes in parameters." + ReplicationSettings.NODES);
      }
      r = r.withNodes(chosen);
    }
    return req.toBuilder().clearParameters().putAllParameters(r.into(req.getParametersMap())).build();
  }

  private static String ownerDown(String node, String what) {
    return what + " is on node " + node + ", and only that node acts on its storage. Bring the caravan plugin on "
        + node + " back (check its peer address and certificate), then retry; if " + node + " is gone for good,"
        + " its volumes went with it: deregister them (nomad volume deregister).";
  }

  @Override
  public void deleteVolume(DeleteVolumeRequest req, StreamObserver<DeleteVolumeResponse> out) {
    routed(out, () -> Routing.ownerIfOurs(backend, req.getVolumeId(), true), "volume " + req.getVolumeId(),
        () -> deleteHere(req),
        (stub, key) -> stub.deleteVolume(DeleteVolumeCall.newBuilder().setIdempotencyKey(key).setRequest(req).build()));
  }

  /**
   * The owner's part of DeleteVolume: deletes the volume on this node's storage, then asks the name's
   * home to forget its claim. A claim the home keeps (it is down, or the views differ) only sends a
   * later create of the name to this node, which makes the volume again or answers: the delete succeeds
   * either way.
   */
  DeleteVolumeResponse deleteHere(DeleteVolumeRequest req) {
    Optional<String> name;
    Optional<ReplicationSettings> replicated = Optional.empty();
    try {
      name = backend.findVolume(req.getVolumeId()).map(VolumeInfo::name);
      if (name.isPresent() && replicator.isPresent()) {
        replicated = backend.replication().flatMap(r -> r.settings(req.getVolumeId())).filter(ReplicationSettings::on);
      }
    } catch (RuntimeException invalid) {
      name = Optional.empty(); // the delete below answers a malformed id with the spec's code
    }
    DeleteVolumeResponse done;
    if (replicated.isPresent()) {
      // No round may take a snapshot or hold one in a send while the volume goes.
      ReplicationScheduler rounds = scheduler.orElseThrow();
      rounds.hold(req.getVolumeId());
      try {
        done = InProcess.call(local::deleteVolume, req);
      } finally {
        rounds.release(req.getVolumeId());
      }
      deleteReplicas(req.getVolumeId(), replicated.get());
    } else {
      done = InProcess.call(local::deleteVolume, req);
    }
    name.ifPresent(this::releaseDeleted);
    return done;
  }

  /**
   * The owner's part of CreateVolume. Ids derive from names, so a volume made again under the name of
   * a deleted one has its id, and a replica of the deleted one may still be on a node that was down
   * when it was deleted. A CO would take that replica for a copy of the new volume: it holds bytes the
   * new volume never had. So when this call makes the volume, no round starts until every other node
   * has been asked to delete what it holds of that id. A node that does not answer keeps it, named in
   * the log; the new volume's rounds to it then meet a copy they share nothing with, which the backend
   * refreshes in full (Replication#receive).
   */
  CreateVolumeResponse createHere(CreateVolumeRequest req) {
    if (scheduler.isEmpty()) {
      return InProcess.call(local::createVolume, req);
    }
    ReplicationScheduler rounds = scheduler.get();
    rounds.pause();
    try {
      boolean existed = !req.getName().isEmpty() && backend.volumeNames().containsKey(req.getName());
      CreateVolumeResponse made = InProcess.call(local::createVolume, req);
      String id = made.getVolume().getVolumeId();
      if (!existed && backend.replication().flatMap(r -> r.settings(id)).filter(ReplicationSettings::on).isPresent()) {
        for (String node : authority.view().nodes()) {
          if (!node.equals(self)) {
            deleteFormerReplica(id, node);
          }
        }
      }
      return made;
    } finally {
      rounds.resume();
    }
  }

  private void deleteFormerReplica(String volumeId, String node) {
    try {
      if (replicator.orElseThrow().deleteReplica(volumeId, node)) {
        LOG.log(System.Logger.Level.WARNING, "node {0} held a replica of an earlier volume with the id of new volume"
            + " {1} (its node was down when that volume was deleted): deleted", node, volumeId);
      }
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "node {0} may hold a replica of an earlier volume with the id of new"
          + " volume {1}; it is kept, and the new volume''s rounds to that node find it: {2}", node, volumeId,
          e.getMessage());
    }
  }

  /**
   * Deletes a deleted volume's replicas on their nodes. One whose node does not answer is kept, and
   * the log names it and the node; the delete succeeds either way, since the volume itself is gone.
   */
  private void deleteReplicas(String volumeId, ReplicationSettings r) {
    for (String node : r.nodes()) {
      try {
        replicator.orElseThrow().deleteReplica(volumeId, node);
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.WARNING, "the replica of deleted volume {0} on node {1} is kept: {2}", volumeId,
            node, e.getMessage());
      }
    }
  }

  private void releaseDeleted(String name) {
    HomeAuthority.View v = authority.view();
    String home = v.home(name);
    try {
      boolean released = home.equals(self) ? release(name, v)
          : clients.client(home).call("", (stub, key) -> stub.releaseName(ReleaseNameCall.newBuilder()
              .setIdempotencyKey(key).setName(name).setView(v.proto(self)).build())).getReleased();
      if (!released) {
        LOG.log(System.Logger.Level.INFO, "node {0}, home of the volume name {1}, keeps its claim after the delete:"
            + " a volume of that name is still recorded on its claimed owner", home, name);
      }
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.INFO, "node {0}, home of the volume name {1}, keeps its claim after the delete ({2});"
          + " a later create of the name goes to node {3}", home, name, e.getMessage(), self);
    }
  }

  /** The home's part of a deleted name's release, asked by the owner that deleted it. */
  ReleaseNameAnswer release(ReleaseNameCall call) {
    return ReleaseNameAnswer.newBuilder().setReleased(release(call.getName(), authority.check(call.getView())))
        .build();
  }

  /**
   * Forgets the claim for {@code name} once its claimed owner answers that it holds nothing of that
   * name, under the name's lock so that no create of it is being placed meanwhile. Only the home
   * releases: a claim is a home's record, and a node that is not the name's home under {@code v} keeps
   * none that decides.
   */
  private boolean release(String name, HomeAuthority.View v) {
    if (!v.home(name).equals(self)) {
      return false;
    }
    ReentrantLock lock = locks.lock(name, self);
    try {
      Optional<String> owner = claims.owner(name);
      if (owner.isEmpty()) {
        return true;
      }
      PlacementReport r = report(owner.get(), CreateVolumeRequest.newBuilder().setName(name).build(), v, true, "");
      if (!r.getExistingVolumeId().isEmpty()) {
        return false;
      }
      claims.release(name);
      return true;
    } finally {
      lock.unlock();
    }
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
