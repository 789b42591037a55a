package dev.caravan.csi.scenario;

import static dev.caravan.csi.scenario.Caps.MIB;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.testing.NomadFake.Instance;
import dev.caravan.csi.cli.Main;
import dev.caravan.csi.support.Json;
import dev.caravan.csi.observe.nomad.NomadPaths.NomadVolume;
import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.observe.inspect.Chain;
import dev.caravan.csi.observe.inspect.Finding;
import dev.caravan.csi.observe.nomad.NomadClient;
import dev.caravan.csi.testing.NomadFake;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The Nomad layer of the claim chain, against the faithful fake of Nomad's task API on a real unix
 * socket: what each claim, evaluation and plugin answer shows, and each disagreement as a finding
 * with the command to run next. The plugin is a real one (file backend) serving the observe API.
 */
class NomadChainTest {
  private static final String TOKEN = "wi-jwt.header.payload.signature";
  private static final String ALLOC_A = "a8198d79-cfdb-6593-a999-1e9adabcba2e";
  private static final String ALLOC_B = "cd13d9b9-4f97-7184-c88b-7b451981616b";
  private static final String NODE_A = "fb2170a8-257d-3c64-b14d-bc06cc94e34c";
  private static final String NODE_B = "9230cd3b-3bda-9a3f-82f9-b2ea8dedb20e";
  private static final String WRITERS_EXHAUSTED = "CSI volume db has exhausted its available writer claims";

  @TempDir Path dir;
  private NomadFake nomad;
  private PluginFixture f;
  private final HttpClient http = HttpClient.newHttpClient();
  private final VolumeCapability cap = Caps.mount("ext4");
  private String vol;
  private String here;

  @BeforeEach
  void setUp() throws Exception {
    nomad = new NomadFake(dir.resolve("api.sock"), TOKEN);
    NomadClient client = new NomadClient(nomad.socket, () -> Optional.of(TOKEN), Duration.ofSeconds(5));
    f = PluginFixture.start(s -> s.withObserve(ObserveSettings.on(HttpSettings.loopback(0)).withStats(ObserveTest.QUIET)
        .withNomad(Optional.of(client))));
    vol = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("nomad-chain").addVolumeCapabilities(cap)
        .setCapacityRange(Caps.bytes(32 * MIB)).build()).getVolume().getVolumeId();
    here = (String) get("/v1/volumes/" + vol + "/chain").get("node_id");
    nomad.addVolume("prod", "db", vol);
  }

  @AfterEach
  void tearDown() throws IOException {
    try {
      if (f != null) {
        f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(vol).build());
        f.close();
      }
    } finally {
      nomad.close();
      http.close();
    }
  }

  @SuppressWarnings("unchecked") // the API's objects are JSON objects
  private Map<String, Object> get(String path) throws IOException, InterruptedException {
    return (Map<String, Object>) Json.parse(getText(path));
  }

  private String getText(String path) throws IOException, InterruptedException {
    int port = f.plugin().observability().httpAddress().orElseThrow().getPort();
    HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return r.body();
  }

  @SuppressWarnings("unchecked") // JSON objects
  private static Map<String, Object> nomadLayer(Map<String, Object> chain) {
    return (Map<String, Object>) ((Map<String, Object>) chain.get("layers")).get("nomad");
  }

  @SuppressWarnings("unchecked") // JSON objects
  private static Map<String, Object> evidence(Map<String, Object> chain) {
    return (Map<String, Object>) nomadLayer(chain).get("evidence");
  }

  private Chain inspect(String namespace, String nomadVolume) {
    return f.plugin().observability().inspector().inspect(vol, Optional.of(new NomadVolume(namespace, nomadVolume)));
  }

  private static List<String> nomadCodes(Chain c) {
    return c.findings().stream().map(Finding::code)
        .filter(code -> code.startsWith("nomad-") || code.contains("attachment")).toList();
  }

  private static Finding finding(Chain c, String code) {
    return c.findings().stream().filter(x -> x.code().equals(code)).findFirst().orElseThrow(
        () -> new AssertionError("no finding " + code + " in " + c.findings()));
  }

  private void healthyPlugin() {
    nomad.putPlugin("caravan", true, List.of(new Instance(NODE_A, "", true)),
        List.of(new Instance(NODE_A, "node-a-csi", true), new Instance(NODE_B, here, true)));
  }

  /**
   * Staged and published here under Nomad's layout: the chain finds the Nomad volume from the staging
   * path, shows the claim with its allocation's place in the reschedule chain, and agrees; the plugin
   * unhealthy here, or not reporting this node at all, are findings.
   */
  @Test
  void aHealthyClaimAgreesAndShowsTheAllocationChain() throws Exception {
    healthyPlugin();
    nomad.addAllocation("prod", ALLOC_A, "web", "db", NODE_A, "client-a", "complete", "stop", "", ALLOC_B);
    nomad.addAllocation("prod", ALLOC_B, "web", "db", NODE_B, "client-b", "running", "run", ALLOC_A, "");
    nomad.claim("prod", "db", ALLOC_B, true);
    nomad.addEvaluation("prod", "web", "e-1", "complete", 10, "", Map.of());
    Path staging = f.dir("staging/prod/db/rw-file-system-single-node-writer");
    Path target = f.dir("per-alloc/" + ALLOC_B + "/db").resolve("rw-file-system-single-node-writer");
    f.node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging.toString()).setVolumeCapability(cap).build());
    f.node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(vol)
        .setStagingTargetPath(staging.toString()).setTargetPath(target.toString()).setVolumeCapability(cap).build());
    try {
      Map<String, Object> chain = get("/v1/volumes/" + vol + "/chain");
      assertThat(chain.get("agree")).as(Json.pretty(chain)).isEqualTo(true);
      assertThat(nomadLayer(chain).get("state")).isEqualTo("ok");
      Map<String, Object> ev = evidence(chain);
      assertThat(ev.get("volume_id_from")).isEqualTo("the staging path");
      assertThat(ev.get("namespace")).isEqualTo("prod");
      @SuppressWarnings("unchecked")
      List<Map<String, Object>> claims = (List<Map<String, Object>>) ev.get("claims");
      assertThat(claims).hasSize(1);
      assertThat(claims.getFirst()).containsEntry("mode", "write").containsEntry("allocation_id", ALLOC_B)
          .containsEntry("client_status", "running").containsEntry("node_id", NODE_B)
          .containsEntry("previous_allocation", ALLOC_A).containsEntry("plugin_node_healthy", true);
      assertThat(Json.write(ev.get("evaluations"))).contains("e-1").contains("complete");
      assertThat(Json.write(ev.get("plugin"))).contains("\"this_node\":{\"nomad_node_id\":\"" + NODE_B + "\"");
      String text = getText("/v1/volumes/db/chain?namespace=prod&format=text");
      assertThat(text).contains("All layers agree.").contains("nomad:").contains(ALLOC_B).doesNotContain(TOKEN);
      String address = "http://127.0.0.1:" + f.plugin().observability().httpAddress().orElseThrow().getPort();
      assertThat(new CommandLine(new Main()).execute("inspect", "db", "--namespace", "prod", "--address", address))
          .isZero();
      assertThat(nomad.requests).contains("GET /v1/allocation/" + ALLOC_B + "?namespace=prod HTTP/1.1",
          "GET /v1/job/web/evaluations?namespace=prod HTTP/1.1", "GET /v1/plugin/csi/caravan HTTP/1.1");

      nomad.putPlugin("caravan", true, List.of(new Instance(NODE_A, "", true)),
          List.of(new Instance(NODE_B, here, false)));
      Chain unhealthy = f.plugin().observability().inspector().inspect(vol);
      assertThat(nomadCodes(unhealthy)).containsExactly("nomad-plugin-node-unhealthy", "nomad-plugin-unhealthy-here");
      assertThat(finding(unhealthy, "nomad-plugin-unhealthy-here").next()).isEqualTo("nomad plugin status -verbose caravan");

      nomad.putPlugin("caravan", true, List.of(new Instance(NODE_A, "", true)),
          List.of(new Instance(NODE_A, "node-a-csi", true)));
      Chain unregistered = f.plugin().observability().inspector().inspect(vol);
      assertThat(nomadCodes(unregistered)).containsExactly("nomad-plugin-node-unhealthy",
          "nomad-plugin-not-registered-here");
      assertThat(finding(unregistered, "nomad-plugin-node-unhealthy").message()).contains("has no node instance");
    } finally {
      f.node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(vol)
          .setTargetPath(target.toString()).build());
      f.node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(vol)
          .setStagingTargetPath(staging.toString()).build());
    }
  }

  /**
   * Mode 3 seen from the replacement's node: the old writer lost on a node whose plugin is gone, the
   * replacement's evaluation blocked on the writer claim. The chain names the holder and the detach to
   * run; after the detach (Nomad frees the claim and places the replacement) it agrees again.
   */
  @Test
  void aLostWriterBlockingTheReplacementNamesTheHolderAndTheDetach() throws Exception {
    healthyPlugin();
    nomad.putPlugin("caravan", true, List.of(new Instance(NODE_B, "", true)),
        List.of(new Instance(NODE_A, "node-a-csi", false), new Instance(NODE_B, here, true)));
    nomad.addAllocation("prod", ALLOC_A, "web", "db", NODE_A, "client-a", "lost", "stop", "", ALLOC_B);
    nomad.addAllocation("prod", ALLOC_B, "web", "db", NODE_B, "client-b", "pending", "run", ALLOC_A, "");
    nomad.claim("prod", "db", ALLOC_A, true);
    nomad.addEvaluation("prod", "web", "e-10", "complete", 10, "e-20", Map.of("db", Map.of(WRITERS_EXHAUSTED, 1)));
    nomad.addEvaluation("prod", "web", "e-20", "blocked", 20, "", Map.of("db", Map.of(WRITERS_EXHAUSTED, 1)));

    Map<String, Object> chain = get("/v1/volumes/db/chain?namespace=prod");
    assertThat(chain.get("agree")).isEqualTo(false);
    assertThat(nomadLayer(chain).get("state")).isEqualTo("disagrees");
    assertThat(evidence(chain).get("volume_id_from")).isEqualTo("the request");
    Chain c = inspect("prod", "db");
    assertThat(nomadCodes(c)).containsExactly("nomad-claim-held-by-stopped-allocation", "nomad-plugin-node-unhealthy",
        "nomad-placement-blocked-on-writer-claim");
    String detach = "nomad volume detach -namespace prod db " + NODE_A;
    assertThat(finding(c, "nomad-claim-held-by-stopped-allocation")).satisfies(x -> {
      assertThat(x.severity()).isEqualTo("error");
      assertThat(x.message()).contains(ALLOC_A).contains("lost (desired stop)").contains("client-a");
      assertThat(x.next()).isEqualTo(detach);
    });
    assertThat(finding(c, "nomad-placement-blocked-on-writer-claim")).satisfies(x -> {
      assertThat(x.message()).contains("e-20").contains("group db").contains(WRITERS_EXHAUSTED).contains(ALLOC_A);
      assertThat(x.next()).isEqualTo(detach);
    });
    assertThat(finding(c, "nomad-plugin-node-unhealthy").message()).contains(NODE_A)
        .contains("probe failed: connection refused");
    assertThat(getText("/v1/volumes/db/chain?namespace=prod&format=text")).contains("next: " + detach);

    // the operator detaches: Nomad frees the claim, unblocks the evaluation and places the replacement
    nomad.release("prod", "db", ALLOC_A);
    nomad.addAllocation("prod", ALLOC_B, "web", "db", NODE_B, "client-b", "running", "run", ALLOC_A, "");
    nomad.claim("prod", "db", ALLOC_B, true);
    nomad.addEvaluation("prod", "web", "e-20", "complete", 20, "", Map.of());
    Chain after = inspect("prod", "db");
    assertThat(after.findings()).isEmpty();
  }

  /**
   * The holder still runs: the next command is to look at it (and stop it), never to detach a live
   * writer. A finished reader still counted is a warning (it blocks no writer), with the detach.
   */
  @Test
  void aRunningWriterIsNamedButNotDetached() {
    healthyPlugin();
    nomad.addAllocation("prod", ALLOC_A, "web", "db", NODE_A, "client-a", "running", "run", "", "");
    nomad.claim("prod", "db", ALLOC_A, true);
    nomad.addAllocation("prod", ALLOC_B, "web", "db", NODE_B, "client-b", "complete", "run", "", "");
    nomad.claim("prod", "db", ALLOC_B, false);
    nomad.addEvaluation("prod", "web", "e-5", "blocked", 5, "", Map.of("db", Map.of(WRITERS_EXHAUSTED, 2)));
    Chain c = inspect("prod", "db");
    assertThat(nomadCodes(c)).containsExactly("nomad-claim-held-by-stopped-allocation",
        "nomad-placement-blocked-on-writer-claim");
    assertThat(finding(c, "nomad-claim-held-by-stopped-allocation")).satisfies(x -> {
      assertThat(x.severity()).isEqualTo("warning");
      assertThat(x.message()).contains(ALLOC_B).contains("reader");
      assertThat(x.next()).isEqualTo("nomad volume detach -namespace prod db " + NODE_B);
    });
    assertThat(finding(c, "nomad-placement-blocked-on-writer-claim").next())
        .startsWith("nomad alloc status " + ALLOC_A).doesNotContain("detach");
  }

  /**
   * The claim of a garbage-collected allocation: Nomad's Read Volume no longer lists it, but the
   * scheduler's reason names it; and a client that disconnected while its allocation held a claim.
   */
  @Test
  void aGarbageCollectedWriterAndADisconnectedClient() {
    healthyPlugin();
    nomad.claim("prod", "db", "0b1e5c3d-0000-4000-8000-00000000gone", true); // never added: collected
    nomad.addAllocation("prod", ALLOC_B, "web", "db", NODE_B, "client-b", "unknown", "run", "", "");
    nomad.claim("prod", "db", ALLOC_B, false);
    nomad.addEvaluation("prod", "web", "e-7", "blocked", 7, "", Map.of("db", Map.of(WRITERS_EXHAUSTED
        + " and is claimed by a garbage collected allocation 0b1e5c3d-0000-4000-8000-00000000gone; waiting for claim"
        + " to be released", 1)));
    Chain c = inspect("prod", "db");
    assertThat(nomadCodes(c)).containsExactly("nomad-claim-on-disconnected-node",
        "nomad-placement-blocked-on-writer-claim");
    assertThat(finding(c, "nomad-placement-blocked-on-writer-claim").message()).contains("no longer lists");
    assertThat(finding(c, "nomad-claim-on-disconnected-node").next()).isEqualTo("nomad node status " + NODE_B);
  }

  /** Placement failures about the plugin or the volume, and the plugin's own health. */
  @Test
  void placementAndPluginFailuresEachBecomeAFinding() {
    nomad.putPlugin("caravan", true, List.of(new Instance(NODE_A, "", false)),
        List.of(new Instance(NODE_B, here, true)));
    nomad.addAllocation("prod", ALLOC_B, "web", "db", NODE_B, "client-b", "running", "run", "", "");
    nomad.claim("prod", "db", ALLOC_B, false);
    nomad.addEvaluation("prod", "web", "e-3", "complete", 3, "e-4", Map.of("db", Map.of(
        "CSI plugin caravan is missing from client " + NODE_A, 1,
        "CSI plugin caravan is unhealthy on client " + NODE_B, 1,
        "missing CSI Volume db", 1,
        "missing drivers", 3)));
    Chain c = inspect("prod", "db");
    assertThat(nomadCodes(c)).containsExactly("nomad-plugin-no-healthy-controller", "nomad-placement-plugin-missing",
        "nomad-placement-plugin-unhealthy", "nomad-placement-missing-volume");
    assertThat(finding(c, "nomad-placement-missing-volume").next()).isEqualTo("nomad volume status -namespace prod db");
    assertThat(c.findings()).noneMatch(x -> x.message().contains("missing drivers"));

    nomad.putPlugin("caravan", true, List.of(new Instance(NODE_A, "", true), new Instance(NODE_B, "", false)),
        List.of(new Instance(NODE_B, here, true)));
    nomad.addEvaluation("prod", "web", "e-3", "complete", 3, "", Map.of());
    assertThat(nomadCodes(inspect("prod", "db"))).containsExactly("nomad-plugin-controllers-degraded");
  }

  /**
   * A volume Nomad has registered that the storage does not have (deleted behind Nomad's back, or
   * registered with a wrong external id): not an unknown volume (404) but a finding that names both
   * sides, with Nomad's command to run next.
   */
  @Test
  void aVolumeNomadHasAndTheStorageLacksIsAFindingNamingBothSides() throws Exception {
    healthyPlugin();
    String deleted = f.controller.createVolume(CreateVolumeRequest.newBuilder().setName("deleted")
        .addVolumeCapabilities(cap).setCapacityRange(Caps.bytes(32 * MIB)).build()).getVolume().getVolumeId();
    f.controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(deleted).build());
    nomad.addVolume("prod", "gone", deleted);
    String typo = vol.substring(0, vol.length() - 1) + (vol.endsWith("0") ? "1" : "0"); // one hex digit off
    nomad.addVolume("prod", "typo", typo);

    Map<String, Object> chain = get("/v1/volumes/gone/chain?namespace=prod");
    assertThat(chain.get("volume_id")).isEqualTo(deleted);
    @SuppressWarnings("unchecked") // JSON objects
    Map<String, Object> backendLayer = (Map<String, Object>) ((Map<String, Object>) chain.get("layers")).get("backend");
    assertThat(backendLayer.get("state")).isEqualTo("missing");
    assertThat(nomadLayer(chain).get("state")).isEqualTo("ok");
    Chain gone = f.plugin().observability().inspector().inspect(deleted, Optional.of(new NomadVolume("prod", "gone")));
    assertThat(gone.findings()).extracting(Finding::code).containsExactly("nomad-volume-not-in-storage");
    assertThat(finding(gone, "nomad-volume-not-in-storage")).satisfies(x -> {
      assertThat(x.severity()).isEqualTo("error");
      assertThat(x.message()).contains("Nomad has volume gone (namespace prod)").contains("external id " + deleted)
          .contains("the storage has no such");
      assertThat(x.next()).startsWith("nomad volume status -namespace prod gone")
          .contains("nomad volume deregister -namespace prod gone");
    });
    String address = "http://127.0.0.1:" + f.plugin().observability().httpAddress().orElseThrow().getPort();
    assertThat(new CommandLine(new Main()).execute("inspect", "gone", "--namespace", "prod", "--address", address))
        .as("caravan inspect answers with the finding, not 'unknown volume'").isZero();
    assertThat(getText("/v1/volumes/typo/chain?namespace=prod&format=text"))
        .contains("[error] Nomad has volume typo (namespace prod) registered with external id " + typo)
        .contains("next: nomad volume status -namespace prod typo");
  }

  /** What the chain says when Nomad cannot help: no such volume, another external id, no plugin, no answer. */
  @Test
  void unknownVolumeOtherExternalIdMissingPluginAndSilence() throws Exception {
    Chain unknown = inspect("prod", "nope");
    assertThat(nomadCodes(unknown)).containsExactly("nomad-volume-unknown");
    assertThat(Json.write(unknown.toJson())).contains("\"state\":\"unknown-volume\"");

    nomad.addVolume("prod", "other", "vol-other-0123456789ab");
    Chain other = inspect("prod", "other");
    assertThat(nomadCodes(other)).containsExactly("nomad-external-id-differs", "nomad-plugin-missing");

    Chain noRef = f.plugin().observability().inspector().inspect(vol);
    assertThat(Json.write(noRef.toJson())).contains("\"state\":\"not-consulted\"").contains("no Nomad volume id");

    nomad.close();
    Chain silent = inspect("prod", "db");
    assertThat(nomadCodes(silent)).isEmpty();
    assertThat(Json.write(silent.toJson())).contains("\"state\":\"unreachable\"").doesNotContain(TOKEN);
  }
}
