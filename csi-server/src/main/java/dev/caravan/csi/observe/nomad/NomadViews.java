package dev.caravan.csi.observe.nomad;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The parts of Nomad's HTTP API answers the claim-chain inspector reads, as immutable values, and
 * their parsing from the JSON Nomad documents. Fields Nomad leaves out read as empty strings, false
 * or 0: an older Nomad that lacks one must not break the inspector.
 */
public final class NomadViews {
  private NomadViews() {}

  /** An allocation as the Read CSI Volume answer lists it ({@code Allocations}, list stubs). */
  public record AllocStub(String id, String nodeId, String nodeName, String jobId, String taskGroup,
      String clientStatus, String desiredStatus) {}

  /**
   * Read CSI Volume ({@code GET /v1/volume/csi/:id}): the claims and the plugin health Nomad
   * denormalizes onto the volume. {@code ReadAllocs}/{@code WriteAllocs} are maps of allocation id to
   * null; the allocations themselves are the {@code Allocations} stubs. Past claims are not part of
   * the HTTP answer (Nomad's API type leaves them out).
   */
  public record VolumeClaims(String id, String namespace, String externalId, String pluginId, String accessMode,
      boolean schedulable, Set<String> readAllocs, Set<String> writeAllocs, List<AllocStub> allocations,
      boolean controllerRequired, long controllersHealthy, long controllersExpected, long nodesHealthy,
      long nodesExpected) {
    public VolumeClaims {
      readAllocs = Set.copyOf(readAllocs);
      writeAllocs = Set.copyOf(writeAllocs);
      allocations = List.copyOf(allocations);
    }

    public Optional<AllocStub> stub(String allocId) {
      return allocations.stream().filter(a -> a.id().equals(allocId)).findFirst();
    }
  }

  /** Read Allocation ({@code GET /v1/allocation/:id}): where it runs, its state, and its place in a reschedule chain. */
  public record Allocation(String id, String namespace, String nodeId, String nodeName, String jobId,
      String taskGroup, String clientStatus, String desiredStatus, String previousAllocation, String nextAllocation) {
    /** Whether the allocation is done on its client (Nomad's terminal client states). */
    public boolean terminal() {
      return clientStatus.equals("complete") || clientStatus.equals("failed") || clientStatus.equals("lost");
    }
  }

  /** One task group's placement failure in an evaluation ({@code FailedTGAllocs}, an AllocMetric). */
  public record PlacementFailure(long nodesEvaluated, long nodesFiltered, long nodesExhausted,
      Map<String, Long> constraintFiltered) {
    public PlacementFailure {
      constraintFiltered = Map.copyOf(constraintFiltered);
    }
  }

  /** One evaluation of a job ({@code GET /v1/job/:id/evaluations}). */
  public record Evaluation(String id, String status, String statusDescription, String triggeredBy,
      String blockedEval, long createIndex, long modifyIndex, Map<String, PlacementFailure> failedTaskGroups) {
    public Evaluation {
      failedTaskGroups = Map.copyOf(failedTaskGroups);
    }
  }

  /** One plugin instance as Read CSI Plugin lists it, keyed by Nomad node id. */
  public record PluginInstance(String nomadNodeId, String allocId, boolean healthy, String healthDescription,
      String csiNodeId) {}

  /** Read CSI Plugin ({@code GET /v1/plugin/csi/:id}). */
  public record CsiPlugin(String id, boolean controllerRequired, long controllersHealthy, long controllersExpected,
      long nodesHealthy, long nodesExpected, Map<String, PluginInstance> controllers,
      Map<String, PluginInstance> nodes) {
    public CsiPlugin {
      controllers = Map.copyOf(controllers);
      nodes = Map.copyOf(nodes);
    }

    /** The node instance whose CSI node id (NodeGetInfo) is {@code csiNodeId}. */
    public Optional<PluginInstance> nodeWithCsiId(String csiNodeId) {
      return nodes.values().stream().filter(n -> n.csiNodeId().equals(csiNodeId)).findFirst();
    }
  }

  static VolumeClaims volume(Map<?, ?> m) {
    List<AllocStub> stubs = new ArrayList<>();
    if (m.get("Allocations") instanceof List<?> list) {
      for (Object o : list) {
        if (o instanceof Map<?, ?> a) {
          stubs.add(new AllocStub(str(a, "ID"), str(a, "NodeID"), str(a, "NodeName"), str(a, "JobID"),
              str(a, "TaskGroup"), str(a, "ClientStatus"), str(a, "DesiredStatus")));
        }
      }
    }
    return new VolumeClaims(str(m, "ID"), str(m, "Namespace"), str(m, "ExternalID"), str(m, "PluginID"),
        str(m, "AccessMode"), bool(m, "Schedulable"), keys(m, "ReadAllocs"), keys(m, "WriteAllocs"), stubs,
        bool(m, "ControllerRequired"), num(m, "ControllersHealthy"), num(m, "ControllersExpected"),
        num(m, "NodesHealthy"), num(m, "NodesExpected"));
  }

  static Allocation allocation(Map<?, ?> m) {
    return new Allocation(str(m, "ID"), str(m, "Namespace"), str(m, "NodeID"), str(m, "NodeName"), str(m, "JobID"),
        str(m, "TaskGroup"), str(m, "ClientStatus"), str(m, "DesiredStatus"), str(m, "PreviousAllocation"),
        str(m, "NextAllocation"));
  }

  static Evaluation evaluation(Map<?, ?> m) {
    Map<String, PlacementFailure> failed = new TreeMap<>();
    if (m.get("FailedTGAllocs") instanceof Map<?, ?> groups) {
      groups.forEach((group, metric) -> {
        if (metric instanceof Map<?, ?> am) {
          Map<String, Long> constraints = new TreeMap<>();
          if (am.get("ConstraintFiltered") instanceof Map<?, ?> cf) {
            cf.forEach((k, v) -> constraints.put(String.valueOf(k), v instanceof Number n ? n.longValue() : 0L));
          }
          failed.put(String.valueOf(group), new PlacementFailure(num(am, "NodesEvaluated"), num(am, "NodesFiltered"),
              num(am, "NodesExhausted"), constraints));
        }
      });
    }
    return new Evaluation(str(m, "ID"), str(m, "Status"), str(m, "StatusDescription"), str(m, "TriggeredBy"),
        str(m, "BlockedEval"), num(m, "CreateIndex"), num(m, "ModifyIndex"), failed);
  }

  static CsiPlugin plugin(Map<?, ?> m) {
    return new CsiPlugin(str(m, "ID"), bool(m, "ControllerRequired"), num(m, "ControllersHealthy"),
        num(m, "ControllersExpected"), num(m, "NodesHealthy"), num(m, "NodesExpected"),
        instances(m.get("Controllers")), instances(m.get("Nodes")));
  }

  private static Map<String, PluginInstance> instances(Object o) {
    Map<String, PluginInstance> out = new TreeMap<>();
    if (o instanceof Map<?, ?> m) {
      m.forEach((node, info) -> {
        if (info instanceof Map<?, ?> i) {
          String csiNode = i.get("NodeInfo") instanceof Map<?, ?> ni ? str(ni, "ID") : "";
          out.put(String.valueOf(node), new PluginInstance(String.valueOf(node), str(i, "AllocID"), bool(i, "Healthy"),
              str(i, "HealthDescription"), csiNode));
        }
      });
    }
    return out;
  }

  private static Set<String> keys(Map<?, ?> m, String field) {
    Set<String> out = new TreeSet<>();
    if (m.get(field) instanceof Map<?, ?> map) {
      map.keySet().forEach(k -> out.add(String.valueOf(k)));
    }
    return out;
  }

  private static String str(Map<?, ?> m, String field) {
    return m.get(field) instanceof String s ? s : "";
  }

  private static boolean bool(Map<?, ?> m, String field) {
    return Boolean.TRUE.equals(m.get(field));
  }

  private static long num(Map<?, ?> m, String field) {
    return m.get(field) instanceof Number n ? n.longValue() : 0L;
  }
}
