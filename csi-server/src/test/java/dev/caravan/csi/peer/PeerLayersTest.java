package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.observe.Json;
import dev.caravan.csi.observe.inspect.Chain;
import dev.caravan.csi.observe.inspect.Finding;
import dev.caravan.csi.observe.inspect.PeerNodes;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The claim chain's {@code peer_nodes} layer: two plugins (nodes a and b, file backend) over the real
 * peer channel with mTLS. Node a stages and publishes its volume; node b's inspector asks a for its own
 * layers and says whether a detach from a would cut a writer off, and says so when a does not answer.
 */
class PeerLayersTest {
  private static final long MIB = 1L << 20;
  private static final String ALLOC = "5d0a3c1e-8f3b-4c1e-9a77-2b1f0c9d4e61";
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
    Path staging = Files.createDirectories(cluster.work.resolve("a-mnt/staging/prod/db/rw"));
    Path target = Files.createDirectories(cluster.work.resolve("a-mnt/per-alloc/" + ALLOC + "/db")).resolve("rw");
    NodeGrpc.NodeBlockingStub node = NodeGrpc.newBlockingStub(a.channel.channel());
    node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(CAP).build());
    node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).setVolumeCapability(CAP).build());
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
      node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(vol)
          .setTargetPath(target.toString()).build());
      node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(vol)
          .setStagingTargetPath(staging.toString()).build());
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

  private static void assertNoAnswerFinding(Chain chain) {
    assertThat(chain.findings()).extracting(Finding::code).containsExactly("peer-did-not-answer");
    assertThat(chain.findings().getFirst().severity()).isEqualTo("warning");
    assertThat(chain.findings().getFirst().next()).isEqualTo("nomad node status -verbose  # is node a up, is its"
        + " plugin running? Detach only once it answers, or once the node is known to be down");
  }

  private Chain inspectOnB(String vol) {
    return cluster.node("b").plugin.observability().inspector().inspect(vol);
  }

  @SuppressWarnings("unchecked") // the layer is the inspector's JSON-shaped map
  private static Map<String, Object> peerRow(Chain chain, String node) {
    Map<String, Object> layer = (Map<String, Object>) chain.layers().get("peer_nodes");
    assertThat(layer).as(Json.pretty(chain.toJson())).containsOnlyKeys(node);
    return (Map<String, Object>) layer.get(node);
  }
}
