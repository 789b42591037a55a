package dev.caravan.csi.service;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.node.MountOptions;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeCapability.AccessMode.Mode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * Request validation shared by the services. Every failure is INVALID_ARGUMENT naming the field and
 * the rule it broke, so that a caller can fix the request without reading our code.
 */
public final class Validate {
  public static final List<String> FS_TYPES = List.of("ext4", "xfs");
  private static final int MAX_PATH = 4096;
  private static final Set<Mode> SINGLE_NODE_MODES =
      Set.of(
          Mode.SINGLE_NODE_WRITER,
          Mode.SINGLE_NODE_READER_ONLY,
          Mode.SINGLE_NODE_SINGLE_WRITER,
          Mode.SINGLE_NODE_MULTI_WRITER);

  private Validate() {}

  public static void required(String field, String value) {
    if (value.isEmpty()) {
      throw CsiException.invalid(field + " is required");
    }
  }

  /** A CO-chosen name: required, at most 128 bytes, no control characters (CSI's rule). */
  public static void name(String field, String name) {
    required(field, name);
    if (name.getBytes(StandardCharsets.UTF_8).length > IdRules.MAX_BYTES) {
      throw CsiException.invalid(field + " is longer than " + IdRules.MAX_BYTES + " bytes");
    }
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (Character.isISOControl(c) && c != '\t' && c != '\n' && c != '\r') {
        throw CsiException.invalid(
            field + " '" + IdRules.printable(name) + "' contains a control character, which CSI forbids");
      }
    }
  }

  /**
   * An absolute, already-normalized host path: no relative form, no "." or ".." segments, no NUL.
   * A single trailing slash is tolerated and dropped.
   */
  public static Path path(String field, String value) {
    required(field, value);
    if (value.length() > MAX_PATH) {
      throw CsiException.invalid(field + " is longer than " + MAX_PATH + " characters");
    }
    if (value.indexOf('\0') >= 0) {
      throw CsiException.invalid(field + " contains a NUL character");
    }
    if (!value.startsWith("/")) {
      throw CsiException.invalid(field + " '" + IdRules.printable(value) + "' must be an absolute path");
    }
    String trimmed = value.length() > 1 && value.endsWith("/") ? value.substring(0, value.length() - 1) : value;
    for (String segment : trimmed.substring(1).split("/", -1)) {
      if (segment.isEmpty() || segment.equals(".") || segment.equals("..")) {
        throw CsiException.invalid(
            field + " '" + IdRules.printable(value)
                + "' must be a normalized path (no empty, '.' or '..' segments)");
      }
    }
    if (trimmed.equals("/")) {
      throw CsiException.invalid(field + " must not be the root directory");
    }
    return Path.of(trimmed);
  }

  public static CapacityRange capacity(String field, dev.caravan.csi.v1.CapacityRange range) {
    long required = range.getRequiredBytes();
    long limit = range.getLimitBytes();
    if (required < 0) {
      throw CsiException.invalid(field + ".required_bytes must not be negative (got " + required + ")");
    }
    if (limit < 0) {
      throw CsiException.invalid(field + ".limit_bytes must not be negative (got " + limit + ")");
    }
    if (required > 0 && limit > 0 && limit < required) {
      throw CsiException.invalid(
          field + ".limit_bytes (" + limit + ") must not be smaller than required_bytes (" + required + ")");
    }
    return new CapacityRange(required, limit);
  }

  /** Rejects parameters the backend does not know, listing the known ones. */
  public static void parameters(String field, Map<String, String> given, Set<String> known) {
    Set<String> unknown = new TreeSet<>(given.keySet());
    unknown.removeAll(known);
    if (!unknown.isEmpty()) {
      throw CsiException.invalid(
          field + " contains unknown key(s) " + unknown + "; known keys: "
              + (known.isEmpty() ? "none" : new TreeSet<>(known).toString()));
    }
  }

  public static List<Capability> capabilities(String field, List<VolumeCapability> caps) {
    if (caps.isEmpty()) {
      throw CsiException.invalid(field + " is required (at least one volume capability)");
    }
    List<Capability> out = new ArrayList<>(caps.size());
    for (int i = 0; i < caps.size(); i++) {
      out.add(capability(field + "[" + i + "]", caps.get(i)));
    }
    return out;
  }

  public static Capability capability(String field, VolumeCapability cap) {
    if (!cap.hasAccessMode()) {
      throw CsiException.invalid(field + ".access_mode is required");
    }
    Mode mode = cap.getAccessMode().getMode();
    if (mode == Mode.UNKNOWN || mode == Mode.UNRECOGNIZED) {
      throw CsiException.invalid(
          field + ".access_mode.mode is required: one of " + modeNames(SINGLE_NODE_MODES));
    }
    if (!SINGLE_NODE_MODES.contains(mode)) {
      throw CsiException.invalid(
          field + ".access_mode.mode " + mode.name() + " is not supported: a Caravan volume is a block"
              + " device attached to one node at a time, so only single-node modes work ("
              + modeNames(SINGLE_NODE_MODES) + ")");
    }
    boolean readOnly = mode == Mode.SINGLE_NODE_READER_ONLY;
    return switch (cap.getAccessTypeCase()) {
      case BLOCK -> new Capability(AccessType.BLOCK, Optional.empty(), List.of(), readOnly);
      case MOUNT -> {
        VolumeCapability.MountVolume mount = cap.getMount();
        String fs = mount.getFsType();
        if (!fs.isEmpty() && !FS_TYPES.contains(fs)) {
          throw CsiException.invalid(
              field + ".mount.fs_type '" + IdRules.printable(fs) + "' is not supported; supported: "
                  + String.join(", ", FS_TYPES));
        }
        if (!mount.getVolumeMountGroup().isEmpty()) {
          throw CsiException.invalid(
              field + ".mount.volume_mount_group is not supported (no VOLUME_MOUNT_GROUP capability)");
        }
        for (String flag : mount.getMountFlagsList()) {
          if (!MountOptions.ALLOWED.contains(flag)) {
            throw CsiException.invalid(
                field + ".mount.mount_flags contains '" + IdRules.printable(flag)
                    + "', which is not allowed; allowed: " + new TreeSet<>(MountOptions.ALLOWED));
          }
        }
        yield new Capability(
            AccessType.MOUNT, fs.isEmpty() ? Optional.empty() : Optional.of(fs), mount.getMountFlagsList(), readOnly);
      }
      case ACCESSTYPE_NOT_SET ->
          throw CsiException.invalid(field + " must set an access type: block or mount");
    };
  }

  private static String modeNames(Set<Mode> modes) {
    return modes.stream().map(Enum::name).sorted().toList().toString();
  }
}
