package dev.caravan.csi.testing;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.backend.Topology;
import dev.caravan.csi.support.Json;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.URLDecoder;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A small faithful fake of the Nomad task API socket for the endpoints Caravan reads, built from
 * Nomad's documented API: Read CSI Volume ({@code GET /v1/volume/csi/:volume_id?namespace=}; 404
 * "volume not found" for unknown volumes; claims as {@code ReadAllocs}/{@code WriteAllocs} maps of
 * allocation id to null with the allocations as {@code Allocations} list stubs, past claims not
 * shown, and the plugin's health denormalized onto the volume), Read Service ({@code GET
 * /v1/service/:service_name?namespace=}; the JSON list of the service's registrations in that
 * namespace, each with ID, ServiceName, Namespace, NodeID, Datacenter, JobID, AllocID, Tags, Address,
 * Port, CreateIndex and ModifyIndex, and an empty list for a service nobody registered), Read
 * Allocation ({@code GET /v1/allocation/:alloc_id}; 404 "alloc not found"), List Job Evaluations
 * ({@code GET /v1/job/:job_id/evaluations?namespace=}; a list, empty for a job with none) and Read
 * CSI Plugin ({@code GET /v1/plugin/csi/:plugin_id}; 404 "plugin not found"; Controllers and Nodes
 * maps keyed by Nomad node id, each a CSIInfo with Healthy, HealthDescription, AllocID, Provider and for
 * nodes NodeInfo, whose ID is the plugin's CSI node id: the only place Nomad's API ties a Nomad node id
 * to a CSI one; a node without the plugin has no entry). Like Nomad it always requires a token (403 "Permission
 * denied" otherwise), and it sends 200 answers with {@code Transfer-Encoding: chunked} (as Go's
 * net/http does for bodies it streams) or with a Content-Length.
 */
public final class NomadFake implements AutoCloseable {
  public final Path socket;
  final String token;
  final Map<String, Map<String, Object>> volumes = new ConcurrentHashMap<>(); // "ns/id" -> CSIVolume
  private final Map<String, Map<String, Object>> allocations = new ConcurrentHashMap<>(); // id -> Allocation
  private final Map<String, List<Map<String, Object>>> evaluations = new ConcurrentHashMap<>(); // "ns/job" -> evals
  private final Map<String, Map<String, Object>> plugins = new ConcurrentHashMap<>(); // id -> CSIPlugin
  /** "namespace/service/alloc" → registration. */
  private final Map<String, Map<String, Object>> registrations = new ConcurrentHashMap<>();
  public final List<String> requests = new CopyOnWriteArrayList<>();
  public volatile boolean chunked = true;
  private final ServerSocketChannel server;
  private final Thread loop;

  public NomadFake(Path socket, String token) throws IOException {
    this.socket = socket;
    this.token = token;
    Files.deleteIfExists(socket);
    server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    server.bind(UnixDomainSocketAddress.of(socket));
    loop = Thread.ofVirtual().start(this::serve);
  }

  public void addVolume(String namespace, String id, String externalId) {
    Map<String, Object> v = new LinkedHashMap<>();
    v.put("ID", id);
    v.put("Name", id);
    v.put("Namespace", namespace);
    v.put("ExternalID", externalId);
    v.put("Topologies", List.of(Map.of("Segments", Map.of("caravan.dev/node", "test-node"))));
    v.put("AccessMode", "single-node-writer");
    v.put("AttachmentMode", "file-system");
    v.put("ReadAllocs", new LinkedHashMap<String, Object>());
    v.put("WriteAllocs", new LinkedHashMap<String, Object>());
    v.put("Allocations", new ArrayList<Map<String, Object>>());
    v.put("Schedulable", true);
    v.put("PluginID", "caravan");
    v.put("Provider", "caravan.dev");
    v.put("ProviderVersion", "0.1.0");
    v.put("ControllerRequired", false);
    v.put("ControllersHealthy", 0);
    v.put("ControllersExpected", 0);
    v.put("NodesHealthy", 0);
    v.put("NodesExpected", 0);
    v.put("ResourceExhausted", "0001-01-01T00:00:00Z");
    v.put("CreateIndex", 42);
    v.put("ModifyIndex", 64);
    volumes.put(namespace + "/" + id, v);
  }

  /** An allocation as Read Allocation shows it (the fields Caravan reads, and a few around them). */
  public void addAllocation(String namespace, String id, String jobId, String taskGroup, String nodeId, String nodeName,
      String clientStatus, String desiredStatus, String previous, String next) {
    Map<String, Object> a = new LinkedHashMap<>();
    a.put("ID", id);
    a.put("Namespace", namespace);
    a.put("EvalID", "5456bd7a-9fc0-c0dd-6131-cbee77f57577");
    a.put("Name", jobId + "." + taskGroup + "[0]");
    a.put("NodeID", nodeId);
    a.put("NodeName", nodeName);
    a.put("JobID", jobId);
    a.put("TaskGroup", taskGroup);
    a.put("DesiredStatus", desiredStatus);
    a.put("DesiredDescription", "");
    a.put("ClientStatus", clientStatus);
    a.put("ClientDescription", "");
    a.put("TaskStates", Map.of());
    a.put("PreviousAllocation", previous);
    a.put("NextAllocation", next);
    a.put("FollowupEvalID", "");
    a.put("CreateIndex", 54);
    a.put("ModifyIndex", 57);
    a.put("CreateTime", 1495747371794276400L);
    a.put("ModifyTime", 1495747371794276400L);
    allocations.put(id, a);
  }

  /** The allocation as Read Allocation would send it (added before). */
  public Map<String, Object> allocation(String id) {
    return new LinkedHashMap<>(allocations.get(id));
  }

  /** Allocation {@code allocId} (added before) claims the volume: as Nomad's Read Volume shows a claim. */
  @SuppressWarnings("unchecked")
  public void claim(String namespace, String volumeId, String allocId, boolean write) {
    Map<String, Object> v = volumes.get(namespace + "/" + volumeId);
    ((Map<String, Object>) v.get(write ? "WriteAllocs" : "ReadAllocs")).put(allocId, null);
  }

  /** Nomad releases the claim (after unpublishing, or for a detach). */
  @SuppressWarnings("unchecked")
  public void release(String namespace, String volumeId, String allocId) {
    Map<String, Object> v = volumes.get(namespace + "/" + volumeId);
    ((Map<String, Object>) v.get("WriteAllocs")).remove(allocId);
    ((Map<String, Object>) v.get("ReadAllocs")).remove(allocId);
  }

  /**
   * One evaluation of a job, or the later state of one added before (same id); {@code failures} maps
   * task group to ConstraintFiltered (reason to node count).
   */
  public void addEvaluation(String namespace, String jobId, String id, String status, int createIndex,
      String blockedEval, Map<String, Map<String, Integer>> failures) {
    Map<String, Object> e = new LinkedHashMap<>();
    e.put("ID", id);
    e.put("Namespace", namespace);
    e.put("Priority", 50);
    e.put("Type", "service");
    e.put("TriggeredBy", "job-register");
    e.put("JobID", jobId);
    e.put("JobModifyIndex", 7);
    e.put("NodeID", "");
    e.put("NodeModifyIndex", 0);
    e.put("Status", status);
    e.put("StatusDescription", "");
    e.put("Wait", 0);
    e.put("NextEval", "");
    e.put("PreviousEval", "");
    e.put("BlockedEval", blockedEval);
    if (failures.isEmpty()) {
      e.put("FailedTGAllocs", null);
    } else {
      Map<String, Object> groups = new LinkedHashMap<>();
      failures.forEach((group, reasons) -> {
        Map<String, Object> metric = new LinkedHashMap<>();
        metric.put("NodesEvaluated", 2);
        metric.put("NodesFiltered", reasons.values().stream().mapToInt(Integer::intValue).sum());
        metric.put("NodesAvailable", Map.of("dc1", 2));
        metric.put("ClassFiltered", null);
        metric.put("ConstraintFiltered", reasons);
        metric.put("NodesExhausted", 0);
        metric.put("ClassExhausted", null);
        metric.put("DimensionExhausted", null);
        metric.put("QuotaExhausted", null);
        metric.put("Scores", null);
        metric.put("AllocationTime", 9408);
        metric.put("CoalescedFailures", 0);
        groups.put(group, metric);
      });
      e.put("FailedTGAllocs", groups);
    }
    e.put("ClassEligibility", null);
    e.put("EscapedComputedClass", false);
    e.put("AnnotatePlan", false);
    e.put("QueuedAllocations", Map.of());
    e.put("SnapshotIndex", createIndex);
    e.put("CreateIndex", createIndex);
    e.put("ModifyIndex", createIndex + 1);
    List<Map<String, Object>> evals = evaluations.computeIfAbsent(namespace + "/" + jobId,
        k -> new CopyOnWriteArrayList<>());
    evals.removeIf(old -> old.get("ID").equals(id)); // an evaluation's later state replaces its earlier one
    evals.add(e);
  }

  /** One plugin instance: on Nomad node {@code nomadNodeId}, reporting {@code csiNodeId} from NodeGetInfo. */
  public record Instance(String nomadNodeId, String csiNodeId, boolean healthy) {}

  /** Registers plugin {@code id} with its controller and node instances; expected counts = instances. */
  public void putPlugin(String id, boolean controllerRequired, List<Instance> controllers, List<Instance> nodes) {
    Map<String, Object> p = new LinkedHashMap<>();
    p.put("ID", id);
    p.put("Provider", "caravan.dev");
    p.put("Version", "0.1.0");
    p.put("ControllerRequired", controllerRequired);
    p.put("ControllersHealthy", controllers.stream().filter(Instance::healthy).count());
    p.put("ControllersExpected", controllers.size());
    p.put("Controllers", infos(id, controllers, false));
    p.put("NodesHealthy", nodes.stream().filter(Instance::healthy).count());
    p.put("NodesExpected", nodes.size());
    p.put("Nodes", infos(id, nodes, true));
    p.put("Allocations", List.of());
    p.put("CreateIndex", 52);
    p.put("ModifyIndex", 93);
    plugins.put(id, p);
  }

  private static Map<String, Object> infos(String plugin, List<Instance> instances, boolean node) {
    Map<String, Object> out = new LinkedHashMap<>();
    for (Instance i : instances) {
      Map<String, Object> info = new LinkedHashMap<>();
      info.put("PluginID", plugin);
      info.put("AllocID", "plugin-alloc-" + i.nomadNodeId());
      info.put("Healthy", i.healthy());
      info.put("HealthDescription", i.healthy() ? "healthy" : "probe failed: connection refused");
      info.put("UpdateTime", "2026-01-31T00:00:00Z");
      info.put("Provider", "caravan.dev");
      info.put("ProviderVersion", "0.1.0");
      info.put("RequiresControllerPlugin", true);
      info.put("RequiresTopologies", true);
      if (node) {
        // The server's CSINodeInfo: ID is NodeGetInfo's node_id from the instance's first fingerprint (the
        // client caches it, so an unhealthy instance keeps it; empty if that fingerprint never completed),
        // MaxVolumes its max_volumes_per_node (0 becomes max int64), AccessibleTopology its segments.
        Map<String, Object> nodeInfo = new LinkedHashMap<>();
        nodeInfo.put("ID", i.csiNodeId());
        nodeInfo.put("MaxVolumes", 9223372036854775807L);
        nodeInfo.put("AccessibleTopology", i.csiNodeId().isEmpty() ? null
            : Map.of("Segments", Map.of(Topology.NODE_KEY, i.csiNodeId())));
        nodeInfo.put("RequiresNodeStageVolume", true);
        nodeInfo.put("SupportsStats", true);
        nodeInfo.put("SupportsExpand", true);
        nodeInfo.put("SupportsCondition", false);
        info.put("NodeInfo", nodeInfo);
      } else {
        info.put("ControllerInfo", Map.of("SupportsReadOnlyAttach", false, "SupportsAttachDetach", true,
            "SupportsListVolumes", true, "SupportsListVolumesAttachedNodes", true));
      }
      out.put(i.nomadNodeId(), info);
    }
    return out;
  }

  /** Registers {@code service} for allocation {@code allocId} on Nomad node {@code nodeId}, at {@code address:port}. */
  public void registerService(String namespace, String service, String allocId, String nodeId, List<String> tags,
      String address, int port) {
    registrations.put(namespace + "/" + service + "/" + allocId, Map.ofEntries(
        Map.entry("ID", "_nomad-task-" + allocId + "-plugin-" + service + "-peer"),
        Map.entry("ServiceName", service), Map.entry("Namespace", namespace), Map.entry("NodeID", nodeId),
        Map.entry("Datacenter", "dc1"), Map.entry("JobID", "caravan"), Map.entry("AllocID", allocId),
        Map.entry("Tags", List.copyOf(tags)), Map.entry("Address", address), Map.entry("Port", port),
        Map.entry("CreateIndex", 10), Map.entry("ModifyIndex", 10)));
  }

  private void serve() {
    while (server.isOpen()) {
      try (SocketChannel ch = server.accept()) {
        handle(ch);
      } catch (IOException e) {
        return;
      }
    }
  }

  private void handle(SocketChannel ch) throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(ch), StandardCharsets.US_ASCII));
    String requestLine = in.readLine();
    String auth = null;
    for (String h = in.readLine(); h != null && !h.isEmpty(); h = in.readLine()) {
      if (h.toLowerCase(java.util.Locale.ROOT).startsWith("authorization:")) {
        auth = h.substring(h.indexOf(':') + 1).strip();
      }
    }
    requests.add(requestLine);
    OutputStream out = Channels.newOutputStream(ch);
    String[] parts = requestLine == null ? new String[0] : requestLine.split(" ", -1);
    if (!("Bearer " + token).equals(auth)) {
      respond(out, 403, "text/plain", "Permission denied");
      return;
    }
    String prefix = parts.length != 3 || !parts[0].equals("GET") ? ""
        : parts[1].startsWith("/v1/volume/csi/") ? "/v1/volume/csi/"
        : parts[1].startsWith("/v1/service/") ? "/v1/service/"
        : parts[1].startsWith("/v1/allocation/") ? "/v1/allocation/"
        : parts[1].startsWith("/v1/job/") ? "/v1/job/"
        : parts[1].startsWith("/v1/plugin/csi/") ? "/v1/plugin/csi/" : "";
    if (prefix.isEmpty()) {
      respond(out, 404, "text/plain", "Invalid URL");
      return;
    }
    String rest = parts[1].substring(prefix.length());
    int q = rest.indexOf('?');
    String name = URLDecoder.decode(q < 0 ? rest : rest.substring(0, q), StandardCharsets.UTF_8);
    String ns = "default";
    if (q >= 0) {
      for (String kv : rest.substring(q + 1).split("&", -1)) {
        if (kv.startsWith("namespace=")) {
          ns = URLDecoder.decode(kv.substring("namespace=".length()), StandardCharsets.UTF_8);
        }
      }
    }
    if (prefix.equals("/v1/service/")) {
      String key = ns + "/" + name + "/";
      List<Map<String, Object>> found = registrations.entrySet().stream().filter(e -> e.getKey().startsWith(key))
          .sorted(Map.Entry.comparingByKey()).map(Map.Entry::getValue).toList();
      respond(out, 200, "application/json", Json.write(found));
      return;
    }
    if (prefix.equals("/v1/allocation/")) {
      Map<String, Object> a = allocations.get(name);
      if (a == null) {
        respond(out, 404, "text/plain", "alloc not found");
      } else {
        respond(out, 200, "application/json", Json.write(a));
      }
      return;
    }
    if (prefix.equals("/v1/job/")) {
      if (!name.endsWith("/evaluations")) {
        respond(out, 404, "text/plain", "Invalid URL");
        return;
      }
      String job = name.substring(0, name.length() - "/evaluations".length());
      respond(out, 200, "application/json", Json.write(evaluations.getOrDefault(ns + "/" + job, List.of())));
      return;
    }
    if (prefix.equals("/v1/plugin/csi/")) {
      Map<String, Object> p = plugins.get(name);
      if (p == null) {
        respond(out, 404, "text/plain", "plugin not found");
      } else {
        respond(out, 200, "application/json", Json.write(p));
      }
      return;
    }
    Map<String, Object> v = volumes.get(ns + "/" + name);
    if (v == null) {
      respond(out, 404, "text/plain", "volume not found");
      return;
    }
    respond(out, 200, "application/json", Json.write(readVolume(v)));
  }

  /**
   * What Read Volume sends: the claims' allocations as stubs, only those Nomad still has (a claim
   * of a garbage-collected allocation is left out), and the plugin's health copied onto the volume.
   */
  @SuppressWarnings("unchecked")
  private Map<String, Object> readVolume(Map<String, Object> stored) {
    Map<String, Object> v = new LinkedHashMap<>(stored);
    Map<String, Object> write = new LinkedHashMap<>();
    Map<String, Object> read = new LinkedHashMap<>();
    List<Map<String, Object>> stubs = new ArrayList<>();
    for (boolean w : new boolean[] {true, false}) {
      for (String id : ((Map<String, Object>) stored.get(w ? "WriteAllocs" : "ReadAllocs")).keySet()) {
        Map<String, Object> a = allocations.get(id);
        if (a == null) {
          continue;
        }
        (w ? write : read).put(id, null);
        Map<String, Object> stub = new LinkedHashMap<>();
        for (String k : List.of("ID", "EvalID", "Name", "Namespace", "NodeID", "NodeName", "JobID", "TaskGroup",
            "DesiredStatus", "DesiredDescription", "ClientStatus", "ClientDescription", "TaskStates", "FollowupEvalID",
            "CreateIndex", "ModifyIndex", "CreateTime", "ModifyTime")) {
          stub.put(k, a.get(k));
        }
        stubs.add(stub);
      }
    }
    v.put("WriteAllocs", write);
    v.put("ReadAllocs", read);
    v.put("Allocations", stubs);
    Map<String, Object> p = plugins.get((String) stored.get("PluginID"));
    if (p != null) {
      for (String k : List.of("ControllerRequired", "ControllersHealthy", "ControllersExpected", "NodesHealthy",
          "NodesExpected")) {
        v.put(k, p.get(k));
      }
      v.put("Schedulable", ((Number) p.get("NodesHealthy")).longValue() > 0
          && (!(Boolean) p.get("ControllerRequired") || ((Number) p.get("ControllersHealthy")).longValue() > 0));
    }
    return v;
  }

  private void respond(OutputStream out, int status, String type, String body) throws IOException {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    StringBuilder head = new StringBuilder("HTTP/1.1 " + status + " X\r\nContent-Type: " + type + "\r\n"
        + "X-Nomad-Index: 42\r\nX-Nomad-Knownleader: true\r\nX-Nomad-Lastcontact: 0\r\n");
    if (chunked && status == 200) {
      head.append("Transfer-Encoding: chunked\r\n\r\n");
      out.write(head.toString().getBytes(StandardCharsets.US_ASCII));
      int half = b.length / 2;
      for (int[] span : new int[][] {{0, half}, {half, b.length}}) {
        out.write((Integer.toHexString(span[1] - span[0]) + ";ext=1\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(b, span[0], span[1] - span[0]);
        out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
      }
      out.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    } else {
      head.append("Content-Length: ").append(b.length).append("\r\n\r\n");
      out.write(head.toString().getBytes(StandardCharsets.US_ASCII));
      out.write(b);
    }
    out.flush();
  }

  @Override
  public void close() throws IOException {
    server.close();
    loop.interrupt();
    Files.deleteIfExists(socket);
  }
}
