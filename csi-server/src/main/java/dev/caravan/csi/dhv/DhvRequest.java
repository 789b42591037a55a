package dev.caravan.csi.dhv;

import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.support.Json;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * One invocation's {@code DHV_*} environment, validated. Only {@link #volumeId} and {@link #nodeId}
 * (both UUIDs, checked character by character) and {@link #volumesDir} (absolute, normalized) ever
 * become part of a path; the volume name, namespace and {@code DHV_CREATED_PATH} are only logged and
 * recorded, since in Nomad's auto-delete call the created path is the whole volumes directory.
 *
 * @param capacityMin {@code DHV_CAPACITY_MIN_BYTES}, 0 when unset
 * @param capacityMax {@code DHV_CAPACITY_MAX_BYTES}, 0 when unset
 * @param parameters {@code DHV_PARAMETERS}, empty for the literal {@code null}
 * @param readOnly {@code DHV_READ_ONLY} of a publish
 * @param accessMode {@code DHV_ACCESS_MODE} of a publish, as Nomad spells it
 */
record DhvRequest(
    Operation operation,
    String volumeId,
    String nodeId,
    Path volumesDir,
    String volumeName,
    String namespace,
    long capacityMin,
    long capacityMax,
    Map<String, String> parameters,
    Optional<String> createdPath,
    Optional<String> allocId,
    String accessMode,
    boolean readOnly) {

  /** A Nomad UUID as Nomad writes it: lower-case hex, 8-4-4-4-12. */
  static final Pattern UUID =
      Pattern.compile("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");

  static final String WRITER = "single-node-writer";
  static final String READER = "single-node-reader-only";
  static final String SINGLE_WRITER = "single-node-single-writer";
  static final String MULTI_WRITER = "single-node-multi-writer";

  DhvRequest {
    parameters = Map.copyOf(parameters);
  }

  /** Reads and checks the variables {@code op} uses; INVALID naming the variable and its rule otherwise. */
  static DhvRequest from(Operation op, Map<String, String> env) {
    String declared = env.getOrDefault("DHV_OPERATION", "");
    if (!declared.equals(op.id())) {
      throw DhvException.invalid("DHV_OPERATION is '" + IdRules.printable(declared) + "' but the operation"
          + " argument is '" + op.id() + "'; Nomad sets both to the same operation");
    }
    String volumeId = uuid(env, "DHV_VOLUME_ID");
    String nodeId = uuid(env, "DHV_NODE_ID");
    Path volumesDir = volumesDir(env.getOrDefault("DHV_VOLUMES_DIR", ""));
    long min = 0;
    long max = 0;
    if (op == Operation.CREATE) {
      min = bytes(env, "DHV_CAPACITY_MIN_BYTES");
      max = bytes(env, "DHV_CAPACITY_MAX_BYTES");
      if (max > 0 && max < min) {
        throw DhvException.invalid("DHV_CAPACITY_MAX_BYTES " + max + " is below DHV_CAPACITY_MIN_BYTES " + min
            + "; capacity_max must be at least capacity_min");
      }
    }
    String accessMode = WRITER;
    boolean readOnly = false;
    if (op == Operation.PUBLISH) {
      accessMode = env.getOrDefault("DHV_ACCESS_MODE", "");
      if (accessMode.isEmpty()) {
        accessMode = WRITER;
      } else if (!java.util.List.of(WRITER, READER, SINGLE_WRITER, MULTI_WRITER).contains(accessMode)) {
        throw DhvException.invalid("DHV_ACCESS_MODE '" + IdRules.printable(accessMode) + "' is not one of "
            + WRITER + ", " + READER + ", " + SINGLE_WRITER + ", " + MULTI_WRITER);
      }
      String attachment = env.getOrDefault("DHV_ATTACHMENT_MODE", "");
      if (!attachment.isEmpty() && !attachment.equals("file-system")) {
        throw DhvException.invalid("DHV_ATTACHMENT_MODE '" + IdRules.printable(attachment) + "' is not supported;"
            + " Caravan's DHV plugins publish file-system volumes only");
      }
      readOnly = bool(env, "DHV_READ_ONLY") || accessMode.equals(READER);
    }
    return new DhvRequest(op, volumeId, nodeId, volumesDir, env.getOrDefault("DHV_VOLUME_NAME", ""),
        env.getOrDefault("DHV_NAMESPACE", ""), min, max, parameters(env.get("DHV_PARAMETERS")),
        Optional.ofNullable(env.get("DHV_CREATED_PATH")), Optional.ofNullable(env.get("DHV_ALLOC_ID")),
        accessMode, readOnly);
  }

  /** Where the volume is mounted on this node: derived from its id alone. */
  Path mountPath() {
    return volumesDir.resolve(volumeId);
  }

  private static String uuid(Map<String, String> env, String name) {
    String v = env.getOrDefault(name, "");
    if (!UUID.matcher(v).matches()) {
      throw DhvException.invalid(name + " '" + IdRules.printable(v) + "' is not a Nomad UUID"
          + " (lower-case hex digits as 8-4-4-4-12)");
    }
    return v;
  }

  private static Path volumesDir(String v) {
    if (v.isEmpty() || v.indexOf('\0') >= 0 || !v.startsWith("/")) {
      throw DhvException.invalid("DHV_VOLUMES_DIR '" + IdRules.printable(v) + "' must be an absolute path");
    }
    Path p = Path.of(v);
    if (!p.normalize().equals(p) || p.getParent() == null) {
      throw DhvException.invalid("DHV_VOLUMES_DIR '" + IdRules.printable(v) + "' must be a normalized path"
          + " below / (no '.' or '..' parts, not / itself)");
    }
    return p;
  }

  private static long bytes(Map<String, String> env, String name) {
    String v = env.getOrDefault(name, "");
    if (v.isEmpty()) {
      return 0;
    }
    try {
      long n = Long.parseLong(v);
      if (n < 0) {
        throw new NumberFormatException();
      }
      return n;
    } catch (NumberFormatException e) {
      throw DhvException.invalid(name + " '" + IdRules.printable(v) + "' is not a non-negative decimal integer");
    }
  }

  private static boolean bool(Map<String, String> env, String name) {
    String v = env.getOrDefault(name, "false");
    return switch (v) {
      case "true" -> true;
      case "false", "" -> false;
      default -> throw DhvException.invalid(name + " '" + IdRules.printable(v) + "' must be true or false");
    };
  }

  /** Nomad's {@code json.Marshal} of a string map, or {@code null}: an object of strings only. */
  static Map<String, String> parameters(String v) {
    if (v == null || v.isEmpty() || v.equals("null")) {
      return Map.of();
    }
    Object parsed;
    try {
      parsed = Json.parse(v);
    } catch (IllegalArgumentException e) {
      throw DhvException.invalid("DHV_PARAMETERS is not JSON: " + e.getMessage());
    }
    if (!(parsed instanceof Map<?, ?> m)) {
      throw DhvException.invalid("DHV_PARAMETERS must be a JSON object of strings or null");
    }
    Map<String, String> out = new TreeMap<>();
    for (Map.Entry<?, ?> e : m.entrySet()) {
      if (!(e.getValue() instanceof String s)) {
        throw DhvException.invalid("DHV_PARAMETERS." + IdRules.printable(String.valueOf(e.getKey()))
            + " must be a string");
      }
      out.put(String.valueOf(e.getKey()), s);
    }
    return out;
  }
}
