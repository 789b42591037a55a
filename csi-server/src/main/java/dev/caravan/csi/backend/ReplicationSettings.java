package dev.caravan.csi.backend;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A volume's replication, as CreateVolume's parameters ask for it: how many other nodes hold a copy
 * ({@value #REPLICAS}), how often it is brought up to date ({@value #INTERVAL}) and, when the request
 * or placement named them, which nodes ({@value #NODES}). Every error is INVALID_ARGUMENT naming
 * {@code parameters.<key>} and the rule.
 *
 * @param replicas 0 when the volume is not replicated
 * @param interval between two replication snapshots; zero when not replicated
 * @param nodes the replica nodes, when known (their count is {@code replicas})
 */
public record ReplicationSettings(int replicas, Duration interval, List<String> nodes) {
  public static final String REPLICAS = "replicas";
  public static final String INTERVAL = "replicationInterval";
  public static final String NODES = "replicaNodes";
  public static final Set<String> PARAMETERS = Set.of(REPLICAS, INTERVAL, NODES);

  public static final Duration MIN_INTERVAL = Duration.ofSeconds(5);
  public static final Duration DEFAULT_INTERVAL = Duration.ofMinutes(1);
  /** No more replicas than this, whatever the number of nodes. */
  public static final int MAX_REPLICAS = 16;

  public static final ReplicationSettings NONE = new ReplicationSettings(0, Duration.ZERO, List.of());

  private static final Pattern DURATION = Pattern.compile("([0-9]{1,6})(s|m|h)");
  private static final Pattern NODE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}");

  public ReplicationSettings {
    nodes = List.copyOf(nodes);
  }

  public boolean on() {
    return replicas > 0;
  }

  /** The settings {@code parameters} ask for; {@link #NONE} when they ask for no replica. */
  public static ReplicationSettings parse(Map<String, String> parameters) {
    String count = parameters.get(REPLICAS);
    int replicas = 0;
    if (count != null) {
      if (!count.matches("[0-9]{1,2}") || Integer.parseInt(count) > MAX_REPLICAS) {
        throw CsiException.invalid("parameters." + REPLICAS + " '" + IdRules.printable(count)
            + "' must be a whole number from 0 to the number of other nodes (at most " + MAX_REPLICAS + ")");
      }
      replicas = Integer.parseInt(count);
    }
    if (replicas == 0) {
      for (String key : List.of(INTERVAL, NODES)) {
        if (parameters.containsKey(key)) {
          throw CsiException.invalid("parameters." + key + " applies only to a replicated volume: set parameters."
              + REPLICAS + " to 1 or more, or leave " + key + " out");
        }
      }
      return NONE;
    }
    Duration interval = parameters.containsKey(INTERVAL) ? interval(parameters.get(INTERVAL)) : DEFAULT_INTERVAL;
    List<String> nodes = parameters.containsKey(NODES) ? nodes(parameters.get(NODES), replicas) : List.of();
    return new ReplicationSettings(replicas, interval, nodes);
  }

  /** {@code 30s}, {@code 1m}, {@code 2h}: at least {@link #MIN_INTERVAL}. */
  static Duration interval(String value) {
    Matcher m = DURATION.matcher(value);
    Duration d = null;
    if (m.matches()) {
      long n = Long.parseLong(m.group(1));
      d = switch (m.group(2)) {
        case "s" -> Duration.ofSeconds(n);
        case "m" -> Duration.ofMinutes(n);
        default -> Duration.ofHours(n);
      };
    }
    if (d == null || d.compareTo(MIN_INTERVAL) < 0) {
      throw CsiException.invalid("parameters." + INTERVAL + " '" + IdRules.printable(value)
          + "' must be a whole number of seconds, minutes or hours (30s, 1m, 2h), at least "
          + MIN_INTERVAL.toSeconds() + "s");
    }
    return d;
  }

  private static List<String> nodes(String value, int replicas) {
    Set<String> out = new LinkedHashSet<>();
    for (String part : value.split(",", -1)) {
      String node = part.strip();
      if (!NODE.matcher(node).matches()) {
        throw CsiException.invalid("parameters." + NODES + " '" + IdRules.printable(value)
            + "' must be node ids separated by commas; '" + IdRules.printable(node) + "' is not a node id");
      }
      if (!out.add(node)) {
        throw CsiException.invalid("parameters." + NODES + " names node " + node + " twice");
      }
    }
    if (out.size() != replicas) {
      throw CsiException.invalid("parameters." + NODES + " names " + out.size() + " node(s); parameters." + REPLICAS
          + " asks for " + replicas + ": they must agree");
    }
    return new ArrayList<>(out);
  }

  /**
   * Checks the settings against the nodes there are: the replica nodes are known peers, none is the
   * owner, and there are enough other nodes.
   *
   * @param others the nodes other than the owner
   */
  public void requireNodes(String owner, Set<String> others) {
    if (replicas > others.size()) {
      throw CsiException.invalid("parameters." + REPLICAS + " " + replicas + " is more than the other nodes there are ("
          + others.size() + (others.isEmpty() ? "" : ": " + String.join(", ", others)) + ")");
    }
    for (String node : nodes) {
      if (node.equals(owner)) {
        throw CsiException.invalid("parameters." + NODES + " names node " + node
            + ", which holds the volume itself: a replica is on another node");
      }
      if (!others.contains(node)) {
        throw CsiException.invalid("parameters." + NODES + " names node " + node + ", which is not a known peer;"
            + " known: " + String.join(", ", others));
      }
    }
  }

  /**
   * On the owner, at CreateVolume: replicas need the peer channel to carry their streams ({@code
   * attached}), and nodes to hold them, other than {@code self}, chosen by the peer layer when the
   * request named none.
   */
  public void requireReplicable(String self, boolean attached) {
    if (!on()) {
      return;
    }
    if (!attached) {
      throw CsiException.invalid("parameters." + REPLICAS + " " + replicas
          + " needs other nodes to hold the copies, and this plugin has no peers (--peer-listen)");
    }
    if (nodes.isEmpty()) {
      throw CsiException.invalid("parameters." + NODES + " is required here: the nodes that"
          + " hold the replicas (the peer layer chooses them when the request names none)");
    }
    if (nodes.contains(self)) {
      throw CsiException.invalid("parameters." + NODES + " names node " + self
          + ", which holds the volume itself: a replica is on another node");
    }
  }

  /** The same settings with their replica nodes chosen. */
  public ReplicationSettings withNodes(List<String> chosen) {
    return new ReplicationSettings(replicas, interval, chosen);
  }

  /** {@code parameters} with these settings' nodes written in. */
  public Map<String, String> into(Map<String, String> parameters) {
    Map<String, String> out = new HashMap<>(parameters);
    out.put(NODES, String.join(",", nodes));
    return out;
  }

  /**
   * For a backend that does not replicate: INVALID_ARGUMENT when replicas are asked for, naming the
   * backend that replicates; {@code replicas=0} alone is what every volume is, and is dropped.
   */
  public static Map<String, String> parametersFor(ControllerBackend backend, Map<String, String> parameters) {
    if (backend.replication().isPresent() || PARAMETERS.stream().noneMatch(parameters::containsKey)) {
      return parameters;
    }
    if (parse(parameters).on()) {
      throw CsiException.invalid("parameters." + REPLICAS + " " + parameters.get(REPLICAS) + " cannot be honoured:"
          + " this backend does not replicate volumes; the local backend (ZFS) and the file backend do");
    }
    Map<String, String> rest = new HashMap<>(parameters);
    rest.remove(REPLICAS);
    return rest;
  }
}
