package dev.caravan.csi.observe.http;

import dev.caravan.csi.support.Failures;
import dev.caravan.csi.backend.ControllerBackend;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.IdShape;
import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.node.StagedVolume;
import dev.caravan.csi.support.Json;
import dev.caravan.csi.observe.nomad.NomadPaths.NomadVolume;
import dev.caravan.csi.observe.inspect.Chain;
import dev.caravan.csi.observe.inspect.ChainInspector;
import dev.caravan.csi.observe.metrics.PrometheusMetrics;
import dev.caravan.csi.observe.nomad.NomadClient;
import dev.caravan.csi.observe.nomad.NomadClient.CsiVolume;
import dev.caravan.csi.observe.nomad.NomadClient.NomadException;
import dev.caravan.csi.observe.stats.UsageCollector;
import dev.caravan.csi.observe.stats.VolumeUsage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The observe endpoints, independent of the HTTP server: {@code GET /metrics},
 * {@code GET /v1/volume-stats[?namespace=]}, {@code GET /v1/volume-stats/{id}[?namespace=]} and
 * {@code GET /v1/volumes/{id}/chain[?namespace=][&format=text]}. {@code {id}} is the CSI volume id,
 * or, when Nomad's task API is reachable, a Nomad volume id (with {@code namespace}, default
 * "default"), resolved to the CSI id through Nomad's Read CSI Volume API.
 */
public final class ObserveApi {
  /** An answer: status, content type, body, extra headers. */
  public record Response(int status, String contentType, String body, Map<String, String> headers) {
    static Response json(int status, Object value) {
      return new Response(status, "application/json", Json.write(value), Map.of());
    }

    static Response error(int status, String message) {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("status", status);
      m.put("error", message);
      return json(status, m);
    }

    Response withHeader(String name, String value) {
      Map<String, String> h = new LinkedHashMap<>(headers);
      h.put(name, value);
      return new Response(status, contentType, body, h);
    }
  }

  private final String nodeId;
  private final ControllerBackend controller;
  private final NodeJournal journal;
  private final UsageCollector usage;
  private final ChainInspector inspector;
  private final Optional<PrometheusMetrics> metrics;
  private final Optional<NomadClient> nomad;
  private final Clock clock;

  public ObserveApi(String nodeId, ControllerBackend controller, NodeJournal journal, UsageCollector usage,
      ChainInspector inspector, Optional<PrometheusMetrics> metrics, Optional<NomadClient> nomad, Clock clock) {
    this.nodeId = nodeId;
    this.controller = controller;
    this.journal = journal;
    this.usage = usage;
    this.inspector = inspector;
    this.metrics = metrics;
    this.nomad = nomad;
    this.clock = clock;
  }

  /** Routes one GET; {@code segments} are the decoded path segments, {@code query} the decoded parameters. */
  public Response get(List<String> segments, Map<String, String> query) {
    try {
      if (segments.equals(List.of("metrics"))) {
        return metrics();
      }
      if (segments.size() == 2 && segments.get(0).equals("v1") && segments.get(1).equals("volume-stats")) {
        return listStats(Optional.ofNullable(query.get("namespace")));
      }
      if (segments.size() == 3 && segments.get(0).equals("v1") && segments.get(1).equals("volume-stats")) {
        return stats(segments.get(2), Optional.ofNullable(query.get("namespace")));
      }
      if (segments.size() == 4 && segments.get(0).equals("v1") && segments.get(1).equals("volumes")
          && segments.get(3).equals("chain")) {
        return chain(segments.get(2), Optional.ofNullable(query.get("namespace")),
            "text".equals(query.get("format")));
      }
      return Response.error(404, "no such endpoint; try /metrics, /v1/volume-stats, /v1/volume-stats/{id},"
          + " /v1/volumes/{id}/chain");
    } catch (RuntimeException e) {
      System.getLogger(ObserveApi.class.getName()).log(System.Logger.Level.WARNING, "observe API failure", e);
      return Response.error(500, Failures.internal(e));
    }
  }

  private Response metrics() {
    if (metrics.isEmpty()) {
      return Response.error(404, "metrics are disabled (caravan serve --metrics=false)");
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(64 * 1024);
    try {
      metrics.get().write(out);
    } catch (IOException e) {
      return Response.error(500, "cannot write metrics: " + e.getMessage());
    }
    return new Response(200, metrics.get().contentType(), out.toString(StandardCharsets.UTF_8), Map.of());
  }

  private Response listStats(Optional<String> namespace) {
    usage.sync();
    Instant now = clock.instant();
    List<Object> volumes = new ArrayList<>();
    for (VolumeUsage u : usage.all()) {
      if (namespace.isPresent() && !u.nomad().map(NomadVolume::namespace).equals(namespace)) {
        continue;
      }
      volumes.add(u.toJson(nodeId, now));
    }
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("node_id", nodeId);
    m.put("collected_at", now.toString());
    m.put("volumes", volumes);
    return Response.json(200, m);
  }

  private Response stats(String id, Optional<String> namespace) {
    Resolved r = resolve(id, namespace);
    if (r.failure != null) {
      return r.failure;
    }
    String csiId = r.csiId;
    Optional<StagedVolume> staged = journal.get(csiId);
    if (staged.isEmpty()) {
      if (controller.findVolume(csiId).isPresent()) {
        return Response.error(412, "volume " + csiId + " exists but is not staged on node " + nodeId);
      }
      return Response.error(404, "no volume " + csiId + " is known here");
    }
    Optional<VolumeUsage> u = usage.get(csiId);
    if (u.isEmpty()) {
      usage.sync();
      u = usage.get(csiId);
    }
    if (u.isEmpty()) {
      usage.requestSoon();
      return Response.error(503, "volume " + csiId + " has not been measured yet").withHeader("Retry-After", "5");
    }
    if (u.get().accessType() == AccessType.MOUNT && u.get().mountedAt().isEmpty()) {
      return Response.error(412, "the node journal says volume " + csiId + " is staged at "
          + staged.get().stagingPaths() + ", but none of those paths is mounted on node " + nodeId
          + " (see GET /v1/volumes/" + csiId + "/chain)");
    }
    if (!u.get().measured()) {
      usage.requestSoon();
      return Response.error(503, "volume " + csiId + " has not been measured yet").withHeader("Retry-After", "5");
    }
    Map<String, Object> body = u.get().toJson(nodeId, clock.instant());
    r.nomad.ifPresent(v -> {
      body.put("nomad_namespace", v.namespace());
      body.put("nomad_volume_id", v.id());
    });
    return Response.json(200, body);
  }

  private Response chain(String id, Optional<String> namespace, boolean text) {
    Resolved r = resolve(id, namespace);
    if (r.failure != null) {
      return r.failure;
    }
    Chain chain = inspector.inspect(r.csiId, r.nomad.map(v -> new NomadVolume(v.namespace(), v.id())));
    if (!chain.known()) {
      return Response.error(404, "no layer on node " + nodeId + " knows volume " + r.csiId
          + " (no backend object, no journal record, no device)");
    }
    if (text) {
      return new Response(200, "text/plain; charset=utf-8", chain.toText(), Map.of());
    }
    return Response.json(200, chain.toJson());
  }

  /** Either a CSI volume id (and the Nomad volume it came from), or the answer to give. */
  private record Resolved(String csiId, Optional<CsiVolume> nomad, Response failure) {
    static Resolved csi(String id, Optional<CsiVolume> nomad) {
      return new Resolved(id, nomad, null);
    }

    static Resolved fail(Response r) {
      return new Resolved(null, Optional.empty(), r);
    }
  }

  private Resolved resolve(String id, Optional<String> namespace) {
    boolean validCsi = validCsiId(id);
    if (namespace.isEmpty() && validCsi
        && (journal.get(id).isPresent() || controller.findVolume(id).isPresent())) {
      return Resolved.csi(id, Optional.empty());
    }
    if (nomad.isPresent()) {
      String ns = namespace.orElse("default");
      try {
        Optional<CsiVolume> v = nomad.get().readCsiVolume(ns, id);
        if (v.isPresent()) {
          if (!validCsiId(v.get().externalId())) {
            return Resolved.fail(Response.error(404, "Nomad volume " + id + " maps to external id "
                + v.get().externalId() + ", which is not a volume of this plugin"));
          }
          return Resolved.csi(v.get().externalId(), v);
        }
        if (namespace.isPresent() || !validCsi) {
          return Resolved.fail(Response.error(404, "neither this node nor Nomad (namespace " + ns
              + ") knows a volume " + id));
        }
      } catch (NomadException e) {
        if (namespace.isPresent() || !validCsi) {
          return Resolved.fail(Response.error(502, e.getMessage()));
        }
      }
    } else if (namespace.isPresent()) {
      return Resolved.fail(Response.error(404, "no volume " + id + " is known here, and Nomad ids cannot be resolved:"
          + " Nomad's task API is not available to this plugin (NOMAD_SECRETS_DIR)"));
    }
    if (!validCsi) {
      return Resolved.fail(Response.error(400, "'" + printable(id) + "' is not a valid volume id"));
    }
    return Resolved.csi(id, Optional.empty());
  }

  private boolean validCsiId(String id) {
    try {
      IdRules.requireBounded("volume_id", id);
    } catch (CsiException e) {
      return false;
    }
    return controller.volumeId(id) instanceof IdShape.Ours;
  }

  private static String printable(String s) {
    String t = s.length() > 64 ? s.substring(0, 64) + "..." : s;
    return t.replaceAll("[^\\x20-\\x7e]", "?");
  }
}
