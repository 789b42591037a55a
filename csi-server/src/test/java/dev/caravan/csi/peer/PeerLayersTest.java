package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.testing.NomadFake;
import dev.caravan.csi.testing.NomadFake.Instance;
import dev.caravan.csi.support.Json;
import dev.caravan.csi.observe.nomad.NomadPaths.NomadVolume;
import dev.caravan.csi.observe.inspect.Chain;
import dev.caravan.csi.observe.inspect.Finding;
import dev.caravan.csi.observe.inspect.PeerNodes;
import dev.caravan.csi.observe.nomad.NomadClient;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The claim chain's {@code peer_nodes} layer: two plugins (nodes a and b, file backend) over the real
 * peer channel with mTLS. Node a stages and publishes its volume; node b's inspector asks a for its own
 * layers and says whether a detach from a would cut a writer off, and says so when a does not answer.
 */
class PeerLayersTest {
  private static final long MIB = 1L << 20;
  private static final String ALLOC = "5d0a3c1e-8f3b-4c1e-9a77-2b1f0c9d4e61";
  private static final String READER = "7f1c2e0a-1b3d-4e5f-8a9b-0c1d2e3f4a5b";
  private static final String READER_D = "8a2d3f1b-2c4e-4f60-9bac-1d2e3f4a5b6c";
  private static final String READER_E = "9b3e4a2c-3d5f-4071-8cbd-2e3f4a5b6c7d";
  private static final String NODE_A = "fb2170a8-257d-3c64-b14d-bc06cc94e34c";
  private static final String NODE_B = "9230cd3b-3bda-9a3f-82f9-b2ea8dedb20e";
  private static final String NODE_C = "c5a1e7d2-6b0f-4c3e-a1d4-5e6f7a8b9c0d";
  private static final String NODE_D = "d6b2f8e3-7c1a-4d4f-b2e5-6f7a8b9c0d1e";
  private static final String NODE_E = "e7c3a9f4-8d2b-4e5a-83f6-7a8b9c0d1e2f";
  private static final String NS = "default";
  private static final String TOKEN = "wi-jwt.peers.payload.signature";
  private static final VolumeCapability CAP = VolumeCapability.newBuilder()
      .setMount(VolumeCapability.MountVolume.newBuilder().setFsType("ext4"))
      .setAccessMode(VolumeCapability.AccessMode.newBuilder().setMode(VolumeCapability.AccessMode.Mode.SINGLE_NODE_WRITER))
      .build();

  private PeerCluster cluster;

  @AfterEach
  void stop() throws Exception {
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void anotherNodesInspectShowsTheHoldersLayersAndWhetherADetachIsSafe() throws Exception {
    cluster = PeerCluster.start("a", "b");
    String vol = cluster.csi("b").createVolume(PeersTest.create("shared", "a", 32 * MIB)).getVolume().getVolumeId();
    PeerCluster.Node a = cluster.node("a");
    MountedOnA mounted = mountOnA(vol, "prod");
    Path staging = mounted.staging();
    Path target = mounted.target();
    try {
      Chain held = inspectOnB(vol);
      Map<String, Object> row = peerRow(held, "a");
      assertThat(row.get("state")).as(Json.pretty(held.toJson())).isEqualTo("holds");
      assertThat(row.get("holds")).isEqualTo(List.of("journal record " + a.plugin.engine().journal().file(vol),
          "staging mount " + staging, "publish mount " + target));
      assertThat(row.get("allocations")).isEqualTo(List.of(ALLOC));
      assertThat(Json.write(row.get("layers"))).contains("\"journal\":{\"state\":\"ok\"").contains(target.toString())
          .doesNotContain("\"backend\"").doesNotContain("\"nomad\"");
      assertThat(held.findings()).extracting(Finding::code).containsExactly("peer-holds-volume");
      assertThat(held.findings().getFirst().severity()).isEqualTo("error");
      assertThat(held.findings().getFirst().next())
          .isEqualTo("nomad alloc stop " + ALLOC + "; then detach once node a holds nothing");
      assertThat(held.toJson().get("agree")).isEqualTo(false);
    } finally {
      mounted.unmount();
    }

    Chain released = inspectOnB(vol);
    assertThat(peerRow(released, "a").get("state")).as(Json.pretty(released.toJson())).isEqualTo("holds-nothing");
    assertThat(peerRow(released, "a").get("holds")).isEqualTo(List.of());
    assertThat(released.findings()).extracting(Finding::code).containsExactly("peer-holds-nothing");
    assertThat(released.findings().getFirst().severity()).isEqualTo("info");
    assertThat(released.findings().getFirst().next())
        .isEqualTo("nomad volume detach <volume> <Nomad node id of a>");
    assertThat(released.toJson().get("agree")).isEqualTo(true);

    // The endpoint reads only ids of the backend's form: the inspector names files after them.
    PeerNodes fromB = cluster.node("b").plugin.peering().orElseThrow().nodes();
    assertThatThrownBy(() -> fromB.layers("a", "../../etc/passwd")).isInstanceOfSatisfying(
        StatusRuntimeException.class, e -> {
          assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
          assertThat(e.getStatus().getDescription())
              .startsWith("volume_id '../../etc/passwd' is not of this backend's form: ");
        });

    // a's plugin stopped: its port refuses connections.
    cluster.stopNode("a");
    Chain refused = inspectOnB(vol);
    assertThat((String) peerRow(refused, "a").get("state")).as(Json.pretty(refused.toJson()))
        .startsWith("did not answer: UNAVAILABLE: node a (peer endpoint " + a.address() + ") cannot be reached: UNAVAILABLE");
    assertNoAnswerFinding(refused);

    // Something holds a's port and never speaks (a hung node): b gives up at the deadline.
    try (ServerSocket silent = new ServerSocket(a.port, 50, InetAddress.getLoopbackAddress())) {
      long start = System.nanoTime();
      Chain hung = inspectOnB(vol);
      Duration took = Duration.ofNanos(System.nanoTime() - start);
      assertThat(took).isGreaterThanOrEqualTo(PeerNodes.DEADLINE).isLessThan(PeerNodes.DEADLINE.plusSeconds(2));
      assertThat((String) peerRow(hung, "a").get("state")).as(Json.pretty(hung.toJson()))
          .startsWith("did not answer: UNAVAILABLE: node a (peer endpoint " + a.address()
              + ") cannot be reached: DEADLINE_EXCEEDED");
      assertNoAnswerFinding(hung);
    }
  }

  /**
   * With Nomad's API (the faithful fake), node b's inspector also asks the nodes of Nomad's claims, whose
   * Nomad node ids it maps to CSI node ids through the plugin's node instances (Read CSI Plugin's
   * NodeInfo.ID), and weighs each answer against the claims there: a claim where nothing is held (stale, or
   * a task running without its volume), something held where Nomad has no claim (a leftover), a claim on a
   * node whose plugin does not answer, and claims on nodes whose CSI node id Nomad does not know (no
   * plugin instance there; an instance whose first fingerprint never completed), each named, never skipped.
   */
  @Test
  void nomadsClaimsNameNodesToAskAndEachAnswerIsWeighedAgainstTheClaimsThere(@TempDir Path api) throws Exception {
    try (NomadFake nomad = new NomadFake(api.resolve("api.sock"), TOKEN)) {
      Map<String, Long> nodes = new LinkedHashMap<>();
      List.of("a", "b", "c").forEach(n -> nodes.put(n, 0L));
      cluster = PeerCluster.start(nodes, (self, others) -> new StaticPeers(others), PeerCluster.FILE,
          Optional.of(new NomadClient(nomad.socket, () -> Optional.of(TOKEN), Duration.ofSeconds(5))));
      String vol = cluster.csi("b").createVolume(PeersTest.create("claimed", "a", 32 * MIB)).getVolume().getVolumeId();
      nomad.addVolume(NS, "db", vol);
      nomad.putPlugin("caravan", false, List.of(), List.of(new Instance(NODE_A, "a", true),
          new Instance(NODE_B, "b", true), new Instance(NODE_C, "c", true)));
      String detach = "nomad volume detach -namespace " + NS + " db ";

      // The writer runs on a: Nomad's claim and a's mounts agree; asked once, as owner and as the claim's node.
      MountedOnA mounted = mountOnA(vol, "default");
      alloc(nomad, ALLOC, NODE_A, "a", "running", "run");
      nomad.claim(NS, "db", ALLOC, true);
      String writer = "write claim of allocation " + ALLOC + " (running (desired run))";
      Chain running = inspectOnB(vol, true);
      Map<String, Object> row = peerRow(running, "a");
      assertThat(row.get("state")).as(Json.pretty(running.toJson())).isEqualTo("holds");
      assertThat(row.get("asked_because")).isEqualTo(List.of("the volume id names it as the owner", "Nomad's " + writer));
      assertThat(row.get("nomad_node_id")).isEqualTo(Optional.of(NODE_A));
      assertThat(row.get("nomad_claims_there")).isEqualTo(List.of(writer));
      assertThat(running.findings()).extracting(Finding::code).containsExactly("peer-holds-volume");
      assertThat(running.findings().getFirst().message()).contains("Node a (Nomad node " + NODE_A + ") still holds")
          .contains("; Nomad has the " + writer + " there");

      // a's client was lost while its host, and the writer, still run: Nomad would let a detach through.
      alloc(nomad, ALLOC, NODE_A, "a", "lost", "stop");
      Chain lost = inspectOnB(vol, true);
      assertThat(lost.findings()).as(Json.pretty(lost.toJson())).extracting(Finding::code)
          .containsExactly("nomad-claim-held-by-stopped-allocation", "peer-holds-volume");
      assertThat(lost.findings().get(1).message()).endsWith("a detach from it now would cut a possible writer off,"
          + " and Nomad, which sees no running allocation there, would let it through.");
      // Nomad's layer alone would advise the detach from a; the answer from a overrules it.
      assertThat(lost.findings().get(0).message()).endsWith(" But that node's plugin answers that it still holds the"
          + " volume (peer-holds-volume): do not detach yet.");
      assertThat(lost.findings().get(0).next()).isEqualTo("nomad alloc stop " + ALLOC
          + "; then detach once node a holds nothing").isEqualTo(lost.findings().get(1).next());

      // Nomad freed the claim (a forced detach) while a's mounts stayed: a leftover Nomad will never unstage.
      alloc(nomad, ALLOC, NODE_A, "a", "complete", "stop");
      nomad.release(NS, "db", ALLOC);
      Chain leftover = inspectOnB(vol, true);
      assertThat(peerRow(leftover, "a").get("asked_because")).as(Json.pretty(leftover.toJson()))
          .isEqualTo(List.of("the volume id names it as the owner"));
      assertThat(leftover.findings()).extracting(Finding::code).containsExactly("peer-holds-without-claim");
      assertThat(leftover.findings().getFirst().severity()).isEqualTo("error");
      assertThat(leftover.findings().getFirst().next()).isEqualTo("nomad alloc status " + ALLOC + "  # still running? "
          + "caravan inspect " + vol + "  # on node a: it names each mount there; stop what uses them (fuser -vm"
          + " <mount>), then unmount them");

      mounted.unmount();

      // Nomad says the writer runs on a, whose plugin holds nothing: the task runs without its volume.
      alloc(nomad, ALLOC, NODE_A, "a", "running", "run");
      nomad.claim(NS, "db", ALLOC, true);
      Chain unmounted = inspectOnB(vol, true);
      assertThat(unmounted.findings()).as(Json.pretty(unmounted.toJson())).extracting(Finding::code)
          .containsExactly("claim-without-mounts");
      assertThat(unmounted.findings().getFirst().next()).isEqualTo("nomad alloc status " + ALLOC + "  # then restart it"
          + " so Nomad stages and publishes the volume again: nomad alloc restart " + ALLOC);

      // a's client was lost and its host came back without the mounts: the write claim is stale, and the
      // detach names a's Nomad node. A reader placed on c (pending) makes c a node to ask: it holds nothing,
      // and a detach from it would cut no writer off.
      alloc(nomad, ALLOC, NODE_A, "a", "lost", "stop");
      alloc(nomad, READER, NODE_C, "c", "pending", "run");
      nomad.claim(NS, "db", READER, false);
      Chain stale = inspectOnB(vol, true);
      assertThat(stale.findings()).as(Json.pretty(stale.toJson())).extracting(Finding::code)
          .containsExactly("nomad-claim-held-by-stopped-allocation", "claim-stale", "peer-holds-nothing");
      Finding staleClaim = stale.findings().get(1);
      assertThat(staleClaim.severity()).isEqualTo("error");
      assertThat(staleClaim.message()).startsWith("Nomad still has the write claim of allocation " + ALLOC
          + " (lost (desired stop)) on node a (Nomad node " + NODE_A + "), but the plugin there holds nothing of " + vol);
      assertThat(staleClaim.next()).isEqualTo(detach + NODE_A);
      assertThat(peerRow(stale, "c").get("asked_because"))
          .isEqualTo(List.of("Nomad's read claim of allocation " + READER + " (pending (desired run))"));
      assertThat(stale.findings().get(2).message()).startsWith("Node c (Nomad node " + NODE_C + ") answers that");
      assertThat(stale.findings().get(2).next()).isEqualTo(detach + NODE_C);

      // c's plugin died under its running reader (Nomad's probe fails, the node id it cached stays); readers
      // on a node without the plugin and on one whose plugin never finished its first fingerprint.
      nomad.release(NS, "db", ALLOC);
      cluster.stopNode("c");
      alloc(nomad, READER, NODE_C, "c", "running", "run");
      alloc(nomad, READER_D, NODE_D, "d", "running", "run");
      alloc(nomad, READER_E, NODE_E, "e", "running", "run");
      nomad.claim(NS, "db", READER_D, false);
      nomad.claim(NS, "db", READER_E, false);
      nomad.putPlugin("caravan", false, List.of(), List.of(new Instance(NODE_A, "a", true),
          new Instance(NODE_B, "b", true), new Instance(NODE_C, "c", false), new Instance(NODE_E, "", false)));
      Chain unasked = inspectOnB(vol, true);
      assertThat(peerNodes(unasked)).as(Json.pretty(unasked.toJson()))
          .containsOnlyKeys("a", "c", "nomad node " + NODE_D, "nomad node " + NODE_E);
      assertThat((String) peerRow(unasked, "c").get("state")).startsWith("did not answer: UNAVAILABLE: node c");
      assertThat(peerRow(unasked, "nomad node " + NODE_D).get("state")).isEqualTo("not asked: plugin caravan has no"
          + " node instance on Nomad node " + NODE_D + " (it does not run there, or never passed its first health"
          + " probe there)");
      assertThat((String) peerRow(unasked, "nomad node " + NODE_E).get("state")).startsWith("not asked: plugin"
          + " caravan's node instance on Nomad node " + NODE_E + " reports no CSI node id");
      List<Finding> peerFindings = unasked.findings().stream()
          .filter(f -> !f.code().equals("nomad-plugin-node-unhealthy")).toList();
      assertThat(peerFindings).extracting(Finding::code)
          .containsExactly("peer-holds-nothing", "peer-did-not-answer", "claim-node-not-asked", "claim-node-not-asked");
      assertThat(peerFindings.get(1).message()).contains("Nomad has the read claim of allocation " + READER
          + " (running (desired run)) there");
      assertThat(peerFindings.get(1).next()).isEqualTo("nomad node status -verbose " + NODE_C + "  # is node c up, is"
          + " its plugin running? Detach only once it answers, or once the node is known to be down");
      assertThat(peerFindings.get(2).severity()).isEqualTo("warning");
      assertThat(peerFindings.get(2).message()).startsWith("Nomad has the read claim of allocation " + READER_D
          + " (running (desired run)) on Nomad node " + NODE_D + ", but that node's plugin was not asked");
      assertThat(peerFindings.get(2).next()).isEqualTo("nomad node status -verbose " + NODE_D
          + "  # is the plugin's node task running there?");
      // Nomad's own layer says the same of the three claim nodes: the plugin is not healthy there.
      assertThat(unasked.findings()).filteredOn(f -> f.code().equals("nomad-plugin-node-unhealthy")).hasSize(3);
    }
  }

  /** A volume staged and published on node a for {@link #ALLOC}, as Nomad's calls leave it. */
  private record MountedOnA(String vol, Path staging, Path target, NodeGrpc.NodeBlockingStub node) {
    void unmount() {
      node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(vol)
          .setTargetPath(target.toString()).build());
      node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(vol)
          .setStagingTargetPath(staging.toString()).build());
    }
  }

  /** Stages {@code vol} on node a under {@code staging/<namespace>/db/rw} and publishes it for ALLOC. */
  private MountedOnA mountOnA(String vol, String namespace) throws IOException {
    Path staging = Files.createDirectories(cluster.work.resolve("a-mnt/staging/" + namespace + "/db/rw"));
    Path target = Files.createDirectories(cluster.work.resolve("a-mnt/per-alloc/" + ALLOC + "/db")).resolve("rw");
    NodeGrpc.NodeBlockingStub node = NodeGrpc.newBlockingStub(cluster.node("a").channel.channel());
    node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(CAP).build());
    node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).setVolumeCapability(CAP).build());
    return new MountedOnA(vol, staging, target, node);
  }

  private static void alloc(NomadFake nomad, String id, String nodeId, String nodeName, String client, String desired) {
    nomad.addAllocation(NS, id, "app", "db", nodeId, nodeName, client, desired, "", "");
  }

  private static void assertNoAnswerFinding(Chain chain) {
    assertThat(chain.findings()).extracting(Finding::code).containsExactly("peer-did-not-answer");
    assertThat(chain.findings().getFirst().severity()).isEqualTo("warning");
    assertThat(chain.findings().getFirst().next()).isEqualTo("nomad node status -verbose  # is node a up, is its"
        + " plugin running? Detach only once it answers, or once the node is known to be down");
  }

  private Chain inspectOnB(String vol) {
    return cluster.node("b").plugin.observability().inspector().inspect(vol);
  }

  /** As {@code caravan inspect db --namespace default} on b: by Nomad's volume id. */
  private Chain inspectOnB(String vol, boolean byNomadId) {
    return cluster.node("b").plugin.observability().inspector().inspect(vol,
        byNomadId ? Optional.of(new NomadVolume(NS, "db")) : Optional.empty());
  }

  @SuppressWarnings("unchecked") // the layer is the inspector's JSON-shaped map
  private static Map<String, Object> peerNodes(Chain chain) {
    return (Map<String, Object>) chain.layers().get("peer_nodes");
  }

  /** The row of {@code node}; when it is the only row the chain has, it must be the only node asked. */
  @SuppressWarnings("unchecked") // the layer is the inspector's JSON-shaped map
  private static Map<String, Object> peerRow(Chain chain, String node) {
    Map<String, Object> layer = peerNodes(chain);
    if (layer.size() == 1 || !layer.containsKey(node)) {
      assertThat(layer).as(Json.pretty(chain.toJson())).containsOnlyKeys(node);
    }
    return (Map<String, Object>) layer.get(node);
  }
}
