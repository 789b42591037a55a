package dev.caravan.csi.observe.inspect;

import dev.caravan.csi.observe.nomad.NomadPaths.NomadVolume;
import dev.caravan.csi.observe.nomad.NomadClient;
import dev.caravan.csi.observe.nomad.NomadClient.NomadException;
import dev.caravan.csi.observe.nomad.NomadViews.Allocation;
import dev.caravan.csi.observe.nomad.NomadViews.AllocStub;
import dev.caravan.csi.observe.nomad.NomadViews.CsiPlugin;
import dev.caravan.csi.observe.nomad.NomadViews.Evaluation;
import dev.caravan.csi.observe.nomad.NomadViews.PlacementFailure;
import dev.caravan.csi.observe.nomad.NomadViews.PluginInstance;
import dev.caravan.csi.observe.nomad.NomadViews.VolumeClaims;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The claim chain as Nomad's HTTP API shows it, read-only: the volume's claims and each claiming
 * allocation (status, node, previous and next allocation), the latest evaluations of the jobs
 * involved with their placement failures, and the plugin's controller and node health; then every
 * disagreement with the other layers (the provider's attachment record above all) as a finding
 * with the command to run next. Findings follow from the answers alone, in a fixed order: the same
 * answers give the same findings.
 */
final class NomadLayer {
  /** Evaluations shown per job, newest first. */
  static final int EVALUATIONS_SHOWN = 3;

  private final NomadClient nomad;
  private final String nodeId;

  NomadLayer(NomadClient nomad, String nodeId) {
    this.nomad = nomad;
    this.nodeId = nodeId;
  }

  /** What this node knows of the volume, for the comparison with Nomad. */
  record Local(String csiVolumeId, boolean stagedHere, Set<String> allocsHere, Optional<List<String>> publishedTo) {
    Local {
      allocsHere = Set.copyOf(allocsHere);
      publishedTo = publishedTo.map(List::copyOf);
    }
  }

  /**
   * The layer's JSON and its findings; with {@code claims} when Nomad's volume was read, for asking the
   * claims' nodes over the peer channel ({@link PeerLayer}).
   */
  record Result(Map<String, Object> layer, List<Finding> findings, Optional<Claims> claims) {
    Result(Map<String, Object> layer, List<Finding> findings) {
      this(layer, findings, Optional.empty());
    }
  }

  /**
   * One of Nomad's claims as the peer layer needs it: the Nomad node Nomad says it is on, and the CSI
   * node id the plugin's node instance there reported, or why none is known.
   *
   * @param status the allocation's client status, and its desired one, in words
   * @param unknownBecause empty when {@code csiNodeId} is known
   */
  record ClaimSite(String mode, String allocId, String clientStatus, String status, String nomadNodeId,
      Optional<String> csiNodeId, String unknownBecause) {
    /** Nomad's client status says the task runs: its stage and publish are done (they come first). */
    boolean running() {
      return clientStatus.equals("running");
    }

    /** Placed and claimed, but its stage and publish may not have run yet: holding nothing is normal. */
    boolean pending() {
      return clientStatus.equals("pending");
    }

    String describe() {
      return mode + " claim of allocation " + allocId + " (" + status + ")";
    }
  }

  /**
   * Nomad's claims on the volume (read and write; its HTTP API shows no past claims) with the node
   * each is on, and the plugin as Read CSI Plugin answered, for mapping CSI node ids to Nomad's.
   */
  record Claims(List<ClaimSite> sites, Optional<CsiPlugin> plugin) {
    Claims {
      sites = List.copyOf(sites);
    }

    /** The Nomad node whose plugin instance reports CSI node id {@code csiNode}, if Nomad says. */
    Optional<String> nomadNodeOf(String csiNode) {
      return plugin.flatMap(p -> p.nodeWithCsiId(csiNode)).map(PluginInstance::nomadNodeId)
          .or(() -> on(csiNode).stream().map(ClaimSite::nomadNodeId).findFirst());
    }

    /** The claims on the node whose CSI node id is {@code csiNode}. */
    List<ClaimSite> on(String csiNode) {
      return sites.stream().filter(s -> s.csiNodeId().equals(Optional.of(csiNode))).toList();
    }

    /** Whether every claim's CSI node id is known: only then does "no claim on that node" follow. */
    boolean allPlaced() {
      return sites.stream().allMatch(s -> s.csiNodeId().isPresent());
    }
  }

  static Result notConsulted(String reason) {
    Map<String, Object> evidence = new LinkedHashMap<>();
    evidence.put("reason", reason);
    return new Result(layer("not-consulted", evidence), List.of());
  }

  Result inspect(NomadVolume ref, String refSource, Local local) {
    String ns = ref.namespace();
    String vol = ref.volumeId();
    Map<String, Object> evidence = new LinkedHashMap<>();
    evidence.put("namespace", ns);
    evidence.put("volume_id", vol);
    evidence.put("volume_id_from", refSource);
    List<Finding> findings = new ArrayList<>();
    Map<String, String> errors = new TreeMap<>();
    Optional<VolumeClaims> read;
    try {
      read = nomad.readCsiVolumeClaims(ns, vol);
    } catch (NomadException e) {
      evidence.put("error", e.getMessage());
      return new Result(layer("unreachable", evidence), List.of());
    }
    if (read.isEmpty()) {
      findings.add(Finding.warning("nomad-volume-unknown",
          "Nomad has no CSI volume " + vol + " in namespace " + ns + ", though " + refSource + " names it.",
          "nomad volume status -namespace " + ns));
      return new Result(layer("unknown-volume", evidence), findings);
    }
    VolumeClaims v = read.get();
    String detach = "nomad volume detach -namespace " + ns + " " + vol + " ";
    evidence.put("external_id", v.externalId());
    evidence.put("plugin_id", v.pluginId());
    evidence.put("access_mode", v.accessMode());
    evidence.put("schedulable", v.schedulable());
    if (!v.externalId().equals(local.csiVolumeId())) {
      findings.add(Finding.error("nomad-external-id-differs",
          "Nomad's volume " + vol + " has external id " + v.externalId() + ", not " + local.csiVolumeId() + ".",
          "nomad volume status -namespace " + ns + " " + vol));
    }

    // ---- claims, and each claiming allocation ----
    List<Claim> claims = new ArrayList<>();
    for (String mode : List.of("write", "read")) {
      for (String allocId : new TreeSet<>(mode.equals("write") ? v.writeAllocs() : v.readAllocs())) {
        Optional<AllocStub> stub = v.stub(allocId);
        Optional<Allocation> alloc = Optional.empty();
        try {
          alloc = nomad.readAllocation(ns, allocId);
        } catch (NomadException e) {
          errors.put("allocation " + allocId, e.getMessage());
        }
        claims.add(new Claim(mode, allocId, stub, alloc));
      }
    }

    // ---- the plugin ----
    Optional<CsiPlugin> pluginAnswer = Optional.empty();
    boolean pluginRead = false;
    if (!v.pluginId().isEmpty()) {
      try {
        pluginAnswer = nomad.readCsiPlugin(v.pluginId());
        pluginRead = true;
      } catch (NomadException e) {
        errors.put("plugin " + v.pluginId(), e.getMessage());
      }
    }
    Optional<CsiPlugin> plugin = pluginAnswer;

    List<Map<String, Object>> claimJson = new ArrayList<>();
    for (Claim c : claims) {
      Map<String, Object> m = c.toJson();
      plugin.ifPresent(p -> m.put("plugin_node_healthy",
          Optional.ofNullable(p.nodes().get(c.nodeId())).map(PluginInstance::healthy)));
      claimJson.add(m);
    }
    evidence.put("claims", claimJson);
    evidence.put("past_claims", "not shown: Nomad's HTTP API leaves past claims out of Read CSI Volume");

    for (Claim c : claims) {
      if (c.stopped()) {
        boolean write = c.mode().equals("write");
        findings.add(new Finding("nomad-claim-held-by-stopped-allocation", write ? "error" : "warning",
            "Nomad still counts allocation " + c.allocId() + " as a " + (write ? "writer" : "reader") + " of " + vol
                + ", but it is " + c.status() + c.onNode() + ". Until the claim is released"
                + (write ? " no other allocation can write the volume" : " the volume stays attached there")
                + "; Nomad releases it once the volume is unpublished from that node, which a node that is gone"
                + " cannot do: the detach does it.",
            c.nodeId().isEmpty() ? "nomad volume status -namespace " + ns + " " + vol : detach + c.nodeId()));
      } else if (c.clientStatus().equals("unknown")) {
        findings.add(Finding.warning("nomad-claim-on-disconnected-node",
            "Allocation " + c.allocId() + ", the volume's " + (c.mode().equals("write") ? "writer" : "reader")
                + ", is in state unknown" + c.onNode()
                + ": its client is disconnected, and it may still be writing.",
            "nomad node status " + c.nodeId()));
      }
    }

    // ---- plugin health ----
    if (pluginRead && plugin.isEmpty()) {
      findings.add(Finding.error("nomad-plugin-missing",
          "Volume " + vol + " names plugin " + v.pluginId() + ", which Nomad does not know: no instance of it runs.",
          "nomad plugin status"));
    }
    plugin.ifPresent(p -> evidence.put("plugin", pluginJson(p, claims)));
    plugin.ifPresent(p -> pluginFindings(p, claims, local, findings));

    // ---- evaluations of the jobs involved ----
    Set<String> jobs = new TreeSet<>();
    claims.forEach(c -> c.jobId().ifPresent(jobs::add));
    for (String allocId : new TreeSet<>(local.allocsHere())) {
      if (claims.stream().noneMatch(c -> c.allocId().equals(allocId))) {
        try {
          nomad.readAllocation(ns, allocId).map(Allocation::jobId).filter(j -> !j.isEmpty()).ifPresent(jobs::add);
        } catch (NomadException e) {
          errors.put("allocation " + allocId, e.getMessage());
        }
      }
    }
    Map<String, Object> evalJson = new LinkedHashMap<>();
    for (String job : jobs) {
      List<Evaluation> evals;
      try {
        evals = nomad.jobEvaluations(ns, job);
      } catch (NomadException e) {
        errors.put("evaluations of job " + job, e.getMessage());
        continue;
      }
      evalJson.put(job, evals.stream().limit(EVALUATIONS_SHOWN).map(NomadLayer::evaluationJson).toList());
      evaluationFindings(job, evals, v, claims, ns, detach, findings);
    }
    evidence.put("evaluations", evalJson);

    // ---- the provider's attachment record against the claims ----
    local.publishedTo().ifPresent(holders -> attachmentFindings(holders, v, claims, plugin, detach, evidence, findings));

    if (!errors.isEmpty()) {
      evidence.put("errors", errors);
    }
    String state = findings.isEmpty() ? (errors.isEmpty() ? "ok" : "partial") : "disagrees";
    String noPlugin = v.pluginId().isEmpty() ? "Nomad's volume names no plugin"
        : !pluginRead ? "Nomad's Read CSI Plugin of " + v.pluginId() + " failed (" + errors.get("plugin " + v.pluginId())
            + ")"
        : "Nomad does not know plugin " + v.pluginId();
    List<ClaimSite> sites = claims.stream().map(c -> site(c, plugin, v.pluginId(), noPlugin)).toList();
    return new Result(layer(state, evidence), findings, Optional.of(new Claims(sites, plugin)));
  }

  /**
   * Where a claim is, by CSI node id. A claim names a Nomad node; Read CSI Plugin, which the inspector
   * reads anyway for the plugin's health, lists each node instance under its Nomad node id
   * ({@code Nodes}, a map of Node.ID to CSIInfo) with {@code NodeInfo.ID}: the node_id its NodeGetInfo
   * returned at the instance's first fingerprint, which Nomad's client caches and keeps sending while
   * the instance is unhealthy (and sends in ControllerPublish as the node). That is the id the node's
   * plugin is known by in the peer set, so no other request (Read Node's CSINodePlugins holds the same
   * CSIInfo) is needed. An instance whose first fingerprint never completed reports an empty id.
   */
  private static ClaimSite site(Claim c, Optional<CsiPlugin> plugin, String pluginId, String noPlugin) {
    String node = c.nodeId();
    Optional<String> csi = Optional.empty();
    String why = "";
    if (node.isEmpty()) {
      why = "Nomad does not say which node allocation " + c.allocId() + " is on ("
          + (c.alloc().isEmpty() && c.stub().isEmpty() ? "it is gone from Nomad" : "its allocation could not be read")
          + ")";
    } else if (plugin.isEmpty()) {
      why = noPlugin + ", so the CSI node id of Nomad node " + node + " is unknown";
    } else {
      PluginInstance i = plugin.get().nodes().get(node);
      if (i == null) {
        why = "plugin " + pluginId + " has no node instance on Nomad node " + node
            + " (it does not run there, or never passed its first health probe there)";
      } else if (i.csiNodeId().isEmpty()) {
        why = "plugin " + pluginId + "'s node instance on Nomad node " + node + " reports no CSI node id (its first"
            + " fingerprint, NodeGetInfo, never completed: " + i.healthDescription() + ")";
      } else {
        csi = Optional.of(i.csiNodeId());
      }
    }
    return new ClaimSite(c.mode(), c.allocId(), c.clientStatus(), c.status(), node, csi, why);
  }

  /** One claim: its mode, and what Nomad says of the allocation holding it. */
  private record Claim(String mode, String allocId, Optional<AllocStub> stub, Optional<Allocation> alloc) {
    String clientStatus() {
      return alloc.map(Allocation::clientStatus).or(() -> stub.map(AllocStub::clientStatus)).orElse("");
    }

    String nodeId() {
      return alloc.map(Allocation::nodeId).or(() -> stub.map(AllocStub::nodeId)).orElse("");
    }

    Optional<String> jobId() {
      return alloc.map(Allocation::jobId).or(() -> stub.map(AllocStub::jobId)).filter(j -> !j.isEmpty());
    }

    /** Done on its client, or no longer known to Nomad at all. */
    boolean stopped() {
      String s = clientStatus();
      return s.equals("complete") || s.equals("failed") || s.equals("lost") || (alloc.isEmpty() && stub.isEmpty());
    }

    String status() {
      if (alloc.isEmpty() && stub.isEmpty()) {
        return "gone from Nomad (garbage collected)";
      }
      String desired = alloc.map(Allocation::desiredStatus).or(() -> stub.map(AllocStub::desiredStatus)).orElse("");
      return clientStatus() + (desired.isEmpty() ? "" : " (desired " + desired + ")");
    }

    String onNode() {
      String name = alloc.map(Allocation::nodeName).or(() -> stub.map(AllocStub::nodeName)).orElse("");
      return nodeId().isEmpty() ? "" : " on node " + nodeId() + (name.isEmpty() ? "" : " (" + name + ")");
    }

    Map<String, Object> toJson() {
      Map<String, Object> m = new LinkedHashMap<>();
      m.put("mode", mode);
      m.put("allocation_id", allocId);
      m.put("client_status", clientStatus());
      m.put("desired_status", alloc.map(Allocation::desiredStatus).or(() -> stub.map(AllocStub::desiredStatus)));
      m.put("node_id", nodeId());
      m.put("node_name", alloc.map(Allocation::nodeName).or(() -> stub.map(AllocStub::nodeName)));
      m.put("job_id", jobId());
      m.put("task_group", alloc.map(Allocation::taskGroup).or(() -> stub.map(AllocStub::taskGroup)));
      m.put("previous_allocation", alloc.map(Allocation::previousAllocation).filter(s -> !s.isEmpty()));
      m.put("next_allocation", alloc.map(Allocation::nextAllocation).filter(s -> !s.isEmpty()));
      m.put("allocation_read", alloc.isPresent());
      return m;
    }
  }

  private Map<String, Object> pluginJson(CsiPlugin p, List<Claim> claims) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("id", p.id());
    m.put("controller_required", p.controllerRequired());
    m.put("controllers_healthy", p.controllersHealthy());
    m.put("controllers_expected", p.controllersExpected());
    m.put("nodes_healthy", p.nodesHealthy());
    m.put("nodes_expected", p.nodesExpected());
    m.put("this_node", p.nodeWithCsiId(nodeId).map(NomadLayer::instanceJson));
    Map<String, Object> claimNodes = new TreeMap<>();
    for (Claim c : claims) {
      if (!c.nodeId().isEmpty()) {
        claimNodes.put(c.nodeId(), Optional.ofNullable(p.nodes().get(c.nodeId())).map(NomadLayer::instanceJson));
      }
    }
    m.put("claim_nodes", claimNodes);
    return m;
  }

  private static Map<String, Object> instanceJson(PluginInstance i) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("nomad_node_id", i.nomadNodeId());
    m.put("csi_node_id", i.csiNodeId());
    m.put("healthy", i.healthy());
    m.put("health_description", i.healthDescription());
    m.put("plugin_allocation_id", i.allocId());
    return m;
  }

  private void pluginFindings(CsiPlugin p, List<Claim> claims, Local local, List<Finding> findings) {
    String status = "nomad plugin status -verbose " + p.id();
    if (p.controllerRequired() && p.controllersHealthy() == 0) {
      findings.add(Finding.error("nomad-plugin-no-healthy-controller",
          "Plugin " + p.id() + " needs a controller and has no healthy one (0 of " + p.controllersExpected()
              + "): Nomad cannot publish or unpublish any of its volumes.",
          status));
    } else if (p.controllersHealthy() < p.controllersExpected()) {
      findings.add(Finding.warning("nomad-plugin-controllers-degraded",
          "Plugin " + p.id() + " has " + p.controllersHealthy() + " healthy controllers of " + p.controllersExpected()
              + " expected.",
          status));
    }
    Set<String> seen = new LinkedHashSet<>();
    for (Claim c : claims) {
      if (c.nodeId().isEmpty() || !seen.add(c.nodeId())) {
        continue;
      }
      PluginInstance i = p.nodes().get(c.nodeId());
      if (i == null || !i.healthy()) {
        findings.add(Finding.error("nomad-plugin-node-unhealthy",
            "Allocation " + c.allocId() + " claims the volume on node " + c.nodeId() + ", where plugin " + p.id()
                + (i == null ? " has no node instance" : " is unhealthy (" + i.healthDescription() + ")")
                + ": Nomad cannot unpublish or unstage the volume there until it is back.",
            status + "; nomad node status " + c.nodeId()));
      }
    }
    if (local.stagedHere()) {
      Optional<PluginInstance> here = p.nodeWithCsiId(nodeId);
      if (here.isEmpty()) {
        findings.add(Finding.warning("nomad-plugin-not-registered-here",
            "This node (CSI node id " + nodeId + ") has the volume staged, but no node instance of plugin " + p.id()
                + " reports that node id to Nomad.",
            status));
      } else if (!here.get().healthy()) {
        findings.add(Finding.error("nomad-plugin-unhealthy-here",
            "Nomad sees plugin " + p.id() + " on this node (" + here.get().nomadNodeId() + ") as unhealthy ("
                + here.get().healthDescription() + "), so the volume is unschedulable here.",
            status));
      }
    }
  }

  private static Map<String, Object> evaluationJson(Evaluation e) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("id", e.id());
    m.put("status", e.status());
    m.put("status_description", e.statusDescription());
    m.put("triggered_by", e.triggeredBy());
    m.put("blocked_eval", e.blockedEval());
    m.put("create_index", e.createIndex());
    Map<String, Object> failed = new TreeMap<>();
    e.failedTaskGroups().forEach((group, f) -> {
      Map<String, Object> g = new LinkedHashMap<>();
      g.put("nodes_evaluated", f.nodesEvaluated());
      g.put("nodes_filtered", f.nodesFiltered());
      g.put("nodes_exhausted", f.nodesExhausted());
      g.put("constraint_filtered", new TreeMap<>(f.constraintFiltered()));
      failed.put(group, g);
    });
    m.put("placement_failures", failed);
    return m;
  }

  /**
   * Placement failures that concern this volume or its plugin, from the evaluations that matter now:
   * the newest one, and any still blocked. The reasons are Nomad's scheduler texts (its feasibility
   * checker's filter reasons), matched by their fixed parts.
   */
  private void evaluationFindings(String job, List<Evaluation> evals, VolumeClaims v, List<Claim> claims, String ns,
      String detach, List<Finding> findings) {
    Set<Evaluation> current = new LinkedHashSet<>();
    evals.stream().findFirst().ifPresent(current::add);
    evals.stream().filter(e -> e.status().equals("blocked")).forEach(current::add);
    Set<String> reported = new TreeSet<>();
    for (Evaluation e : current) {
      for (Map.Entry<String, PlacementFailure> g : new TreeMap<>(e.failedTaskGroups()).entrySet()) {
        for (String reason : new TreeSet<>(g.getValue().constraintFiltered().keySet())) {
          Optional<Finding> f = placementFinding(job, e, g.getKey(), reason, v, claims, ns, detach);
          if (f.isPresent() && reported.add(f.get().code())) {
            findings.add(f.get());
          }
        }
      }
    }
  }

  private static Optional<Finding> placementFinding(String job, Evaluation e, String group, String reason,
      VolumeClaims v, List<Claim> claims, String ns, String detach) {
    String where = "Evaluation " + e.id() + " (" + e.status() + ") of job " + job + " cannot place group " + group
        + ": \"" + reason + "\"";
    String volStatus = "nomad volume status -namespace " + ns + " " + v.id();
    boolean aboutVolume = reason.contains(" " + v.id() + " ") || reason.endsWith(" " + v.id());
    if (aboutVolume && reason.contains("has exhausted its available writer claims")) {
      List<Claim> writers = claims.stream().filter(c -> c.mode().equals("write")).toList();
      if (writers.isEmpty()) {
        return Optional.of(Finding.error("nomad-placement-blocked-on-writer-claim",
            where + ". The writer claim is held by an allocation Nomad's Read Volume no longer lists (garbage"
                + " collected); Nomad frees such claims once the volume is unpublished from its node.",
            volStatus + "  # then, for the node the volume is still attached to: " + detach + "<node>"));
      }
      Claim holder = writers.getFirst();
      return Optional.of(Finding.error("nomad-placement-blocked-on-writer-claim",
          where + ". The writer claim is held by allocation " + holder.allocId() + ", " + holder.status()
              + holder.onNode() + ".",
          holder.stopped() && !holder.nodeId().isEmpty() ? detach + holder.nodeId()
              : "nomad alloc status " + holder.allocId() + "  # it still runs: stop it (nomad alloc stop "
                  + holder.allocId() + ") or wait for it to finish"));
    }
    if (aboutVolume && reason.startsWith("missing CSI Volume")) {
      return Optional.of(Finding.error("nomad-placement-missing-volume", where + ".", volStatus));
    }
    if (aboutVolume && (reason.contains("is unschedulable or has exhausted its available reader claims")
        || reason.contains("is unschedulable or is read-only"))) {
      return Optional.of(Finding.error("nomad-placement-volume-unschedulable", where + ".",
          volStatus + "; nomad plugin status -verbose " + v.pluginId()));
    }
    if (reason.startsWith("CSI plugin " + v.pluginId() + " ")) {
      String plugin = "nomad plugin status -verbose " + v.pluginId();
      if (reason.contains("is missing from client")) {
        return Optional.of(Finding.error("nomad-placement-plugin-missing", where + ".", plugin));
      }
      if (reason.contains("is unhealthy on client")) {
        return Optional.of(Finding.error("nomad-placement-plugin-unhealthy", where + ".", plugin));
      }
      if (reason.contains("has the maximum number of volumes")) {
        return Optional.of(Finding.error("nomad-placement-plugin-max-volumes", where + ".", plugin));
      }
    }
    return Optional.empty();
  }

  /**
   * The provider's attachment record (on qnap, the initiators the target's ACL admits, which are the
   * nodes' CSI node ids) against Nomad's claims: a node the storage admits but no claim of Nomad's
   * is on holds a stale attachment, and keeps every other node fenced off.
   */
  private static void attachmentFindings(List<String> holders, VolumeClaims v, List<Claim> claims,
      Optional<CsiPlugin> plugin, String detach, Map<String, Object> evidence, List<Finding> findings) {
    List<Map<String, Object>> rows = new ArrayList<>();
    for (String holder : holders.stream().sorted().toList()) {
      Optional<String> nomadNode = plugin.flatMap(p -> p.nodeWithCsiId(holder)).map(PluginInstance::nomadNodeId);
      List<String> claimsThere = nomadNode.map(n -> claims.stream().filter(c -> c.nodeId().equals(n))
          .map(Claim::allocId).toList()).orElse(List.of());
      Map<String, Object> row = new LinkedHashMap<>();
      row.put("csi_node_id", holder);
      row.put("nomad_node_id", nomadNode);
      row.put("claims_there", claimsThere);
      rows.add(row);
      if (claimsThere.isEmpty()) {
        findings.add(Finding.error("stale-attachment",
            "The storage still admits node " + holder + nomadNode.map(n -> " (Nomad node " + n + ")").orElse("")
                + " to the volume, but Nomad has no claim on it from "
                + (nomadNode.isPresent() ? "that node" : "any node whose plugin reports that CSI node id")
                + ": a stale attachment, which refuses every other node's publish.",
            nomadNode.map(n -> detach + n).orElse("nomad plugin status -verbose " + v.pluginId()
                + "  # find the Nomad node whose CSI node id is " + holder + ", then: " + detach + "<that node>")));
      }
    }
    evidence.put("provider_attachment", rows);
    if (v.controllerRequired()) {
      for (Claim c : claims) {
        if (c.stopped() || !c.clientStatus().equals("running")) {
          continue;
        }
        Optional<String> csiNode = plugin.flatMap(p -> Optional.ofNullable(p.nodes().get(c.nodeId())))
            .map(PluginInstance::csiNodeId).filter(s -> !s.isEmpty());
        if (csiNode.isPresent() && !holders.contains(csiNode.get())) {
          findings.add(Finding.error("claim-without-attachment",
              "Allocation " + c.allocId() + " runs with a " + c.mode() + " claim" + c.onNode() + ", but the storage"
                  + " does not admit that node (" + csiNode.get() + "): its I/O to the volume fails.",
              "nomad alloc status " + c.allocId() + "  # restart it so Nomad publishes the volume again: nomad alloc"
                  + " restart " + c.allocId()));
        }
      }
    }
  }

  private static Map<String, Object> layer(String state, Map<String, Object> evidence) {
    Map<String, Object> m = new LinkedHashMap<>();
    m.put("state", state);
    m.put("evidence", evidence);
    return m;
  }
}
