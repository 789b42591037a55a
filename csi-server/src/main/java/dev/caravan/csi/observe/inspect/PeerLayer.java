package dev.caravan.csi.observe.inspect;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.observe.Json;
import dev.caravan.csi.peer.v1.NodeLayersAnswer;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * The chain's {@code peer_nodes} layer: each other node the chain points at (the volume's owner, the
 * holders the storage admits), asked over the peer channel for its own layers, and what that means
 * for a detach from it. Every node is asked at once, each within {@link PeerNodes#DEADLINE}.
 */
final class PeerLayer {
  record Result(Map<String, Object> layer, List<Finding> findings, boolean heldSomewhere) {}

  private PeerLayer() {}

  /** @param detach the detach command, less its node argument */
  static Result ask(PeerNodes peers, String volumeId, Set<String> nodes, String detach) {
    Map<String, Future<NodeLayersAnswer>> asks = new LinkedHashMap<>();
    try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
      for (String n : nodes) {
        asks.put(n, threads.submit(() -> peers.layers(n, volumeId)));
      }
    } // waits for every answer; each is bounded by the call's deadline
    Map<String, Object> layer = new LinkedHashMap<>();
    List<Finding> findings = new ArrayList<>();
    boolean held = false;
    for (Map.Entry<String, Future<NodeLayersAnswer>> e : asks.entrySet()) {
      String node = e.getKey();
      Future<NodeLayersAnswer> f = e.getValue();
      Map<String, Object> row = new LinkedHashMap<>();
      if (f.state() != Future.State.SUCCESS) {
        String why = f.state() == Future.State.FAILED ? status(f.exceptionNow()) : f.state().toString();
        row.put("state", "did not answer: " + why);
        findings.add(Finding.warning("peer-did-not-answer",
            "Node " + node + "'s plugin did not answer within " + PeerNodes.DEADLINE.toSeconds() + " s (" + why
                + "): whether it still has " + volumeId + " staged or mounted is unknown, so a detach from it"
                + " could cut a writer off.",
            "nomad node status -verbose  # is node " + node + " up, is its plugin running? Detach only once it"
                + " answers, or once the node is known to be down"));
      } else {
        NodeLayersAnswer a = f.resultNow();
        row.put("state", a.getHoldsCount() == 0 ? "holds-nothing" : "holds");
        row.put("holds", a.getHoldsList());
        row.put("allocations", a.getAllocationsList());
        row.put("layers", Json.parse(a.getLayersJson()));
        if (a.getHoldsCount() == 0) {
          findings.add(Finding.info("peer-holds-nothing",
              "Node " + node + " answers that nothing there holds " + volumeId + " (no journal record, no staging"
                  + " or publish mount): a detach from it cuts no writer off.",
              detach + " <Nomad node id of " + node + ">"));
        } else {
          held = true;
          findings.add(Finding.error("peer-holds-volume",
              "Node " + node + " still holds " + volumeId + " (" + String.join("; ", a.getHoldsList()) + "): a"
                  + " detach from it now would cut a possible writer off.",
              (a.getAllocationsCount() == 0
                  ? "caravan inspect " + volumeId + "  # on node " + node + ": stop what uses its mounts there"
                  : "nomad alloc stop " + String.join(" && nomad alloc stop ", a.getAllocationsList()))
                  + "; then detach once node " + node + " holds nothing"));
        }
      }
      layer.put(node, row);
    }
    return new Result(layer, List.copyOf(findings), held);
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
