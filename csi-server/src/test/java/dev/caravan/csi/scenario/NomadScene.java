package dev.caravan.csi.scenario;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.testing.NomadFake.Instance;
import dev.caravan.csi.support.Json;
import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.observe.inspect.Finding;
import dev.caravan.csi.observe.nomad.NomadClient;
import dev.caravan.csi.testing.NomadFake;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.function.UnaryOperator;

/**
 * Nomad's state around one volume during a failover scenario, kept in a {@link NomadFake} as the
 * scenario makes Nomad's calls: the nodes and their plugin instances, the allocations with their
 * claims, the job's evaluations. Each method is one thing Nomad records (nomad-csi.md §5 and §6:
 * an allocation is placed, claims the volume before its stage and publish, stops, has its claim
 * released after the unpublish; a client's plugin stops answering its health probe), so a scenario
 * can ask, at any instant, what {@code caravan inspect} shows: {@link #inspect} reads the chain from
 * a plugin's observe API by Nomad volume id and namespace, as the command does.
 */
final class NomadScene implements AutoCloseable {
  static final String NAMESPACE = "default";
  static final String PLUGIN = "caravan";
  static final String JOB = "app";
  static final String GROUP = "db";
  private static final String TOKEN = "wi-jwt.scene.payload.signature";

  /** A Nomad client node, and the CSI node id its node plugin reports (NodeGetInfo). */
  record Node(String name, String nomadId, String csiId) {}

  final NomadFake fake;
  /** Nomad's id of the volume, once {@linkplain #register registered}. */
  String volume;
  private final Path dir;
  private final Map<String, Node> nodes = new LinkedHashMap<>();
  private final Map<String, Boolean> nodeHealth = new LinkedHashMap<>();
  private final Map<String, Boolean> controllerHealth = new LinkedHashMap<>();
  private final Map<String, Node> allocNodes = new LinkedHashMap<>();
  private final Map<String, String> previous = new LinkedHashMap<>();
  private final boolean controllerRequired;
  private int evaluations;

  /**
   * Nomad, on a socket of its own under a fresh directory, for a plugin that needs a controller
   * (ControllerPublish) or not; the volume is {@linkplain #register registered} once made.
   */
  NomadScene(boolean controllerRequired) throws IOException {
    this.dir = Files.createTempDirectory("caravan-nomad-");
    this.fake = new NomadFake(dir.resolve("api.sock"), TOKEN);
    this.controllerRequired = controllerRequired;
  }

  /** {@code nomad volume register} (or create) of volume {@code id}, the plugin's volume {@code externalId}. */
  void register(String id, String externalId) {
    volume = id;
    fake.addVolume(NAMESPACE, id, externalId);
  }

  /** The plugin's observe API on a loopback port, reading this Nomad's task API (what {@code caravan serve} does in a Nomad task). */
  UnaryOperator<Plugin.Settings> observe() {
    NomadClient client = new NomadClient(fake.socket, () -> Optional.of(TOKEN), Duration.ofSeconds(5));
    return s -> s.withObserve(ObserveSettings.on(HttpSettings.loopback(0)).withStats(ObserveTest.QUIET)
        .withNomad(Optional.of(client)));
  }

  /** A client node whose node plugin (healthy) reports {@code csiId}. */
  Node node(String name, String csiId) {
    Node n = new Node(name, uuid("node " + name), csiId);
    nodes.put(name, n);
    nodeHealth.put(name, true);
    publishPlugin();
    return n;
  }

  /** A controller instance of the plugin runs on {@code n}. */
  void controllerOn(Node n, boolean healthy) {
    controllerHealth.put(n.name(), healthy);
    publishPlugin();
  }

  /** The node plugin on {@code n} passes or fails Nomad's health probe (a dead plugin, a lost client). */
  void nodePlugin(Node n, boolean healthy) {
    nodeHealth.put(n.name(), healthy);
    publishPlugin();
  }

  private void publishPlugin() {
    List<Instance> controllers = new ArrayList<>();
    controllerHealth.forEach((name, ok) -> controllers.add(new Instance(nodes.get(name).nomadId(), "", ok)));
    List<Instance> instances = new ArrayList<>();
    nodeHealth.forEach((name, ok) -> instances.add(new Instance(nodes.get(name).nomadId(), nodes.get(name).csiId(), ok)));
    fake.putPlugin(PLUGIN, controllerRequired, controllers, instances);
  }

  /** The scheduler places allocation {@code name} of the job on {@code n} (pending), after {@code before} if any. */
  String place(String name, Node n, Optional<String> before) {
    String id = uuid("alloc " + name);
    allocNodes.put(id, n);
    before.ifPresent(b -> previous.put(id, b));
    put(id, "pending", "run");
    before.ifPresent(b -> {
      Map<String, Object> old = fake.allocation(b);
      put(b, (String) old.get("ClientStatus"), (String) old.get("DesiredStatus"));
    });
    evaluation("complete", Map.of());
    return id;
  }

  /** The allocation's claim (write) succeeded, and with its stage and publish, its task runs. */
  void claimedAndRunning(String alloc) {
    fake.claim(NAMESPACE, volume, alloc, true);
    put(alloc, "running", "run");
  }

  /** The allocation stopped: {@code status} is complete, failed or lost. Its claim stays until released. */
  void stopped(String alloc, String status) {
    put(alloc, status, "stop");
  }

  /** The claim is freed: after the node's unpublish and the controller unpublish, or the operator's detach. */
  void released(String alloc) {
    fake.release(NAMESPACE, volume, alloc);
  }

  /** The job's newest evaluation; {@code failures} maps task group to the scheduler's reasons (with node counts). */
  void evaluation(String status, Map<String, Map<String, Integer>> failures) {
    evaluations++;
    fake.addEvaluation(NAMESPACE, JOB, uuid("eval " + evaluations), status, 100 + evaluations, "", failures);
  }

  private void put(String alloc, String client, String desired) {
    Node n = allocNodes.get(alloc);
    String next = allocNodes.keySet().stream().filter(a -> alloc.equals(previous.get(a))).findFirst().orElse("");
    fake.addAllocation(NAMESPACE, alloc, JOB, GROUP, n.nomadId(), n.name(), client, desired,
        previous.getOrDefault(alloc, ""), next);
  }

  /** Nomad's ids are UUIDs; these are fixed per name, so a failure message names the same ids every run. */
  private static String uuid(String name) {
    return UUID.nameUUIDFromBytes(name.getBytes(StandardCharsets.UTF_8)).toString();
  }

  /** {@code nomad volume detach} of this volume from {@code n}: the next command a stuck claim or attachment names. */
  String detach(Node n) {
    return "nomad volume detach -namespace " + NAMESPACE + " " + volume + " " + n.nomadId();
  }

  /**
   * What a Nomad task sees of Nomad (a process's environment): {@code NOMAD_SECRETS_DIR} with the task
   * API's socket and the workload identity's token file.
   */
  Map<String, String> taskEnvironment() throws IOException {
    Files.writeString(dir.resolve("nomad_token"), TOKEN);
    return Map.of("NOMAD_SECRETS_DIR", dir.toString());
  }

  /** What {@code caravan inspect <volume> --namespace default --json} prints, from {@code f}'s plugin. */
  Inspection inspect(PluginFixture f) throws IOException, InterruptedException {
    return inspect("http://127.0.0.1:" + f.plugin().observability().httpAddress().orElseThrow().getPort());
  }

  /** The same, from the plugin whose observe API is at {@code address} (a plugin process of its own). */
  Inspection inspect(String address) throws IOException, InterruptedException {
    URI uri = URI.create(address + "/v1/volumes/" + URLEncoder.encode(volume, StandardCharsets.UTF_8)
        + "/chain?namespace=" + NAMESPACE);
    long start = System.nanoTime();
    try (HttpClient http = HttpClient.newHttpClient()) {
      HttpResponse<String> r = http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(60)).build(),
          HttpResponse.BodyHandlers.ofString());
      // What each inspection costs, in the log: the guest suite's time is counted.
      System.out.printf("  caravan inspect %s at %s: %d ms%n", volume, address, (System.nanoTime() - start) / 1_000_000);
      assertThat(r.statusCode()).as("caravan inspect %s: %s", volume, r.body()).isEqualTo(200);
      @SuppressWarnings("unchecked") // the chain is a JSON object
      Map<String, Object> chain = (Map<String, Object>) Json.parse(r.body());
      return new Inspection(chain);
    }
  }

  /** One answer of the inspector: its findings and layers. */
  record Inspection(Map<String, Object> chain) {
    @SuppressWarnings("unchecked") // JSON objects
    List<Finding> findings() {
      return ((List<Map<String, Object>>) chain.get("findings")).stream().map(m -> new Finding(
          (String) m.get("code"), (String) m.get("severity"), (String) m.get("message"), (String) m.get("next")))
          .toList();
    }

    List<String> codes() {
      return findings().stream().map(Finding::code).toList();
    }

    Finding finding(String code) {
      return findings().stream().filter(x -> x.code().equals(code)).findFirst()
          .orElseThrow(() -> new AssertionError("no finding " + code + " in\n" + Json.pretty(chain)));
    }

    @SuppressWarnings("unchecked") // JSON objects
    Map<String, Object> layer(String name) {
      return (Map<String, Object>) ((Map<String, Object>) chain.get("layers")).get(name);
    }

    /** The state of a layer that has one (backend, attachment, journal, nomad). */
    String state(String layer) {
      return (String) layer(layer).get("state");
    }

    @SuppressWarnings("unchecked") // JSON objects
    Map<String, Object> evidence(String layer) {
      return (Map<String, Object>) layer(layer).get("evidence");
    }

    /** The states of the staging or published mounts, in the journal's order. */
    @SuppressWarnings("unchecked") // JSON objects
    List<String> mountStates(String layer) {
      return ((List<Map<String, Object>>) ((Map<String, Object>) chain.get("layers")).get(layer)).stream()
          .map(m -> (String) m.get("state")).toList();
    }

    /** The backend object's {@code publishedTo} property: the provider's attachment record (qnap: the ACL). */
    @SuppressWarnings("unchecked") // JSON objects
    Optional<String> publishedTo() {
      return Optional.ofNullable((String) ((Map<String, Object>) evidence("backend").get("properties")).get("publishedTo"));
    }

    /** Nomad's claims as the chain shows them: mode, allocation, its client status and node. */
    @SuppressWarnings("unchecked") // JSON objects
    List<String> claims() {
      return ((List<Map<String, Object>>) evidence("nomad").getOrDefault("claims", List.of())).stream()
          .map(c -> c.get("mode") + " " + c.get("allocation_id") + " " + c.get("client_status") + " on "
              + c.get("node_id")).toList();
    }

    @Override
    public String toString() {
      return Json.pretty(chain);
    }
  }

  @Override
  public void close() throws IOException {
    fake.close();
    Files.deleteIfExists(dir.resolve("nomad_token"));
    Files.deleteIfExists(dir);
  }
}
