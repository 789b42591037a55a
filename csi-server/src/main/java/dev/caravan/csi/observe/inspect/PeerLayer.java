package dev.caravan.csi.observe.inspect;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.support.Json;
import dev.caravan.csi.observe.inspect.NomadLayer.ClaimSite;
import dev.caravan.csi.observe.inspect.NomadLayer.Claims;
import dev.caravan.csi.peer.v1.NodeLayersAnswer;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The chain's {@code peer_nodes} layer: each other node the chain points at (the volume's owner, the
 * holders the storage admits, and the nodes of Nomad's claims), asked over the peer channel for its
 * own layers, and what its answer means against Nomad's claims there and for a detach from it. Every
 * node is asked at once, each within {@link PeerNodes#DEADLINE}; a claim whose node cannot be asked
 * (no CSI node id known for it) is a row and a finding of its own, never left out.
 */
final class PeerLayer {
  /**
   * @param unsafeDetaches each {@code nomad volume detach} from a node that answered it still holds the
   *     volume, with that answer's finding
   */
  record Result(Map<String, Object> layer, List<Finding> findings, boolean heldSomewhere,
      Map<String, Finding> unsafeDetaches) {
    /**
     * An earlier finding (Nomad's layer) whose next command detaches from a node that still holds the
     * volume, told so: Nomad's view alone (a lost allocation, say) cannot see the writer still there.
     */
    Finding guard(Finding f) {
      Finding held = unsafeDetaches.get(f.next());
      return held == null ? f : new Finding(f.code(), f.severity(), f.message() + " But that node's plugin answers"
          + " that it still holds the volume (" + held.code() + "): do not detach yet.", held.next());
    }
  }

  private PeerLayer() {}

  /**
   * @param pointedAt the nodes the chain names by CSI node id, each with why (owner, publishedTo)
   * @param nomad Nomad's claims and plugin, when Nomad's volume was read
   * @param self this node's CSI node id: its own layers are the rest of the chain, not a peer's
   * @param detach the detach command, less its node argument
   */
  static Result ask(PeerNodes peers, String volumeId, Map<String, List<String>> pointedAt, Optional<Claims> nomad,
      String self, String detach) {
    Map<String, List<String>> why = new TreeMap<>();
    pointedAt.forEach((n, reasons) -> why.computeIfAbsent(n, k -> new ArrayList<>()).addAll(reasons));
    Map<String, List<ClaimSite>> notAsked = new TreeMap<>();
    for (ClaimSite s : nomad.map(Claims::sites).orElse(List.of())) {
      if (s.csiNodeId().isPresent()) {
        why.computeIfAbsent(s.csiNodeId().get(), k -> new ArrayList<>()).add("Nomad's " + s.describe());
      } else {
        notAsked.computeIfAbsent(s.nomadNodeId().isEmpty() ? "allocation " + s.allocId()
            : "nomad node " + s.nomadNodeId(), k -> new ArrayList<>()).add(s);
      }
    }
    why.remove(self);
    why.remove("");

    Map<String, Future<NodeLayersAnswer>> asks = new LinkedHashMap<>();
    try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
      for (String n : why.keySet()) {
        asks.put(n, threads.submit(() -> peers.layers(n, volumeId)));
      }
    } // waits for every answer; each is bounded by the call's deadline
    Map<String, Object> layer = new LinkedHashMap<>();
    List<Finding> findings = new ArrayList<>();
    Map<String, Finding> unsafe = new LinkedHashMap<>();
    boolean held = false;
    for (Map.Entry<String, Future<NodeLayersAnswer>> e : asks.entrySet()) {
      String node = e.getKey();
      Future<NodeLayersAnswer> f = e.getValue();
      Optional<String> nomadNode = nomad.flatMap(c -> c.nomadNodeOf(node));
      List<ClaimSite> claimsThere = nomad.map(c -> c.on(node)).orElse(List.of());
      String where = "Node " + node + nomadNode.map(n -> " (Nomad node " + n + ")").orElse("");
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("asked_because", why.get(node));
      row.put("nomad_node_id", nomadNode);
      row.put("nomad_claims_there", claimsThere.stream().map(ClaimSite::describe).toList());
      if (f.state() != Future.State.SUCCESS) {
        String reason = f.state() == Future.State.FAILED ? status(f.exceptionNow()) : f.state().toString();
        row.put("state", "did not answer: " + reason);
        findings.add(Finding.warning("peer-did-not-answer",
            where + "'s plugin did not answer within " + PeerNodes.DEADLINE.toSeconds() + " s (" + reason + ")"
                + claimsNote(claimsThere) + ": whether it still has " + volumeId + " staged or mounted is"
                + " unknown, so a detach from it could cut a writer off.",
            "nomad node status -verbose" + nomadNode.map(n -> " " + n).orElse("") + "  # is node " + node
                + " up, is its plugin running? Detach only once it answers, or once the node is known to be down"));
      } else {
        NodeLayersAnswer a = f.resultNow();
        row.put("state", a.getHoldsCount() == 0 ? "holds-nothing" : "holds");
        row.put("holds", a.getHoldsList());
        row.put("allocations", a.getAllocationsList());
        row.put("layers", Json.parse(a.getLayersJson()));
        if (a.getHoldsCount() == 0) {
          List<Finding> claimFindings = new ArrayList<>();
          for (ClaimSite s : claimsThere) {
            claimFinding(s, node, volumeId, detach).ifPresent(claimFindings::add);
          }
          findings.addAll(claimFindings);
          if (claimFindings.isEmpty()) {
            findings.add(Finding.info("peer-holds-nothing",
                where + " answers that nothing there holds " + volumeId + " (no journal record, no staging or"
                    + " publish mount): a detach from it cuts no writer off.",
                detach + " " + nomadNode.orElse("<Nomad node id of " + node + ">")));
          }
        } else {
          held = true;
          String holds = String.join("; ", a.getHoldsList());
          if (nomad.isPresent() && claimsThere.isEmpty() && nomad.get().allPlaced()) {
            // Nomad unpublishes and unstages only where it has a claim: nothing will release these.
            addHeld(findings, unsafe, detach, nomadNode, Finding.error("peer-holds-without-claim",
                where + " still holds " + volumeId + " (" + holds + "), but Nomad has no claim on the volume from"
                    + " that node: a leftover that Nomad will never unpublish or unstage, and a detach from the"
                    + " node now would cut a possible writer off.",
                (a.getAllocationsCount() == 0 ? ""
                    : "nomad alloc status " + String.join(", ", a.getAllocationsList()) + "  # still running? ")
                    + "caravan inspect " + volumeId + "  # on node " + node + ": it names each mount there; stop"
                    + " what uses them (fuser -vm <mount>), then unmount them"));
          } else {
            // Nomad detaches a claim whose allocation it counts as stopped (lost, say) as if nothing were held.
            boolean nomadLetsGo = !claimsThere.isEmpty()
                && claimsThere.stream().noneMatch(c -> c.running() || c.pending());
            addHeld(findings, unsafe, detach, nomadNode, Finding.error("peer-holds-volume",
                where + " still holds " + volumeId + " (" + holds + ")" + claimsNote(claimsThere) + ": a detach from"
                    + " it now would cut a possible writer off"
                    + (nomadLetsGo ? ", and Nomad, which sees no running allocation there, would let it through."
                        : "."),
                (a.getAllocationsCount() == 0
                    ? "caravan inspect " + volumeId + "  # on node " + node + ": stop what uses its mounts there"
                    : "nomad alloc stop " + String.join(" && nomad alloc stop ", a.getAllocationsList()))
                    + "; then detach once node " + node + " holds nothing"));
          }
        }
      }
      layer.put(node, row);
    }
    for (Map.Entry<String, List<ClaimSite>> e : notAsked.entrySet()) {
      List<ClaimSite> sites = e.getValue();
      String reason = sites.getFirst().unknownBecause();
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("state", "not asked: " + reason);
      row.put("nomad_node_id", Optional.of(sites.getFirst().nomadNodeId()).filter(n -> !n.isEmpty()));
      row.put("nomad_claims_there", sites.stream().map(ClaimSite::describe).toList());
      layer.put(e.getKey(), row);
      String nodeId = sites.getFirst().nomadNodeId();
      findings.add(Finding.warning("claim-node-not-asked",
          "Nomad has the " + sites.stream().map(ClaimSite::describe).reduce((x, y) -> x + " and the " + y).orElseThrow()
              + (nodeId.isEmpty() ? "" : " on Nomad node " + nodeId) + ", but that node's plugin was not asked over the"
              + " peer channel: " + reason + ". Whether it still has " + volumeId + " staged or mounted is unknown.",
          nodeId.isEmpty() ? "nomad alloc status " + sites.getFirst().allocId()
              : "nomad node status -verbose " + nodeId + "  # is the plugin's node task running there?"));
    }
    return new Result(layer, List.copyOf(findings), held, Map.copyOf(unsafe));
  }

  private static void addHeld(List<Finding> findings, Map<String, Finding> unsafe, String detach,
      Optional<String> nomadNode, Finding f) {
    findings.add(f);
    nomadNode.ifPresent(n -> unsafe.put(detach + " " + n, f));
  }

  /**
   * What a claim on a node that holds nothing of the volume means: a running allocation without its
   * volume, or a claim that outlived its allocation's use of the volume (stale). A pending claim is
   * normal: Nomad claims before it stages and publishes.
   */
  private static Optional<Finding> claimFinding(ClaimSite s, String node, String volumeId, String detach) {
    if (s.pending()) {
      return Optional.empty();
    }
    String where = " on node " + node + " (Nomad node " + s.nomadNodeId() + ")";
    if (s.running()) {
      return Optional.of(Finding.error("claim-without-mounts",
          "Allocation " + s.allocId() + " runs with a " + s.mode() + " claim on " + volumeId + where + ", but the"
              + " plugin there holds nothing of it (no journal record, no staging or publish mount): the task runs"
              + " without the volume it claims (its mounts were lost: a host reboot, or an unmount behind the"
              + " plugin's back).",
          "nomad alloc status " + s.allocId() + "  # then restart it so Nomad stages and publishes the volume again:"
              + " nomad alloc restart " + s.allocId()));
    }
    boolean write = s.mode().equals("write");
    return Optional.of(new Finding("claim-stale", write ? "error" : "warning",
        "Nomad still has the " + s.describe() + where + ", but the plugin there holds nothing of " + volumeId
            + ": the claim is stale" + (write ? ", and until it is released no other allocation can write the volume"
                : "") + ". A detach from that node cuts no writer off.",
        detach + " " + s.nomadNodeId()));
  }

  private static String claimsNote(List<ClaimSite> claims) {
    return claims.isEmpty() ? ""
        : "; Nomad has the " + claims.stream().map(ClaimSite::describe).reduce((x, y) -> x + " and the " + y)
            .orElseThrow() + " there";
  }

  /** The gRPC status, or the reason the call was not made (a node outside the peer set, say). */
  private static String status(Throwable t) {
    if (t instanceof StatusRuntimeException s) {
      return s.getStatus().getCode() + (s.getStatus().getDescription() == null ? ""
          : " (" + s.getStatus().getDescription() + ")");
    }
    if (t instanceof CsiException c) {
      return c.kind() + ": " + c.getMessage();
    }
    return t.toString();
  }
}
