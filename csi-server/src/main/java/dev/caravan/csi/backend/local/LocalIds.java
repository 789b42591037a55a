package dev.caravan.csi.backend.local;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdRules;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.regex.Pattern;

/**
 * Ids of the {@code local} backend. A volume id names the node that holds the zvol and the zvol's
 * dataset; a snapshot id is its volume's id plus the snapshot's short name:
 *
 * <pre>
 *   local/v1/&lt;node&gt;/&lt;pool&gt;/&lt;parent...&gt;/vol-&lt;slug&gt;-&lt;hash&gt;
 *   local/v1/&lt;node&gt;/&lt;pool&gt;/&lt;parent...&gt;/vol-&lt;slug&gt;-&lt;hash&gt;@snap-&lt;slug&gt;-&lt;hash&gt;
 * </pre>
 *
 * The leaf names derive from the CO's name (a readable slug plus 12 hex digits of its SHA-256), so a
 * retried CreateVolume or CreateSnapshot finds its earlier work without any index. Parsing is strict:
 * every dataset component matches {@link LocalConfig#COMPONENT} (no '.', '..', '@', '#', '%', empty
 * component or control character), the leaf must look like one this backend issues, and the whole id
 * is at most 128 bytes. Whether the dataset is inside this node's parent dataset is checked when the
 * id is resolved ({@link LocalController}), because only the owner node knows its configuration.
 */
final class LocalIds {
  static final String PREFIX = "local/v1/";

  /** Node ids: what NodeGetInfo reports; hostnames and Nomad node ids fit. No '/', no '@'. */
  static final Pattern NODE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}");

  static final Pattern VOLUME_LEAF = Pattern.compile("vol-[a-z0-9]+(-[a-z0-9]+)*");
  static final Pattern SNAPSHOT_LEAF = Pattern.compile("snap-[a-z0-9]+(-[a-z0-9]+)*");

  /** Volume ids are kept this short so that a snapshot id ({@code @snap-<12 hex>} more) always fits. */
  static final int VOLUME_ID_MAX = IdRules.MAX_BYTES - "@snap-".length() - 12;

  private static final int SLUG_MAX = 24;

  private LocalIds() {}

  /** A parsed volume id. */
  record VolumeId(String node, String pool, String parent, String leaf) {
    /** The zvol's full dataset name. */
    String dataset() {
      return pool + "/" + parent + "/" + leaf;
    }

    String id() {
      return PREFIX + node + "/" + dataset();
    }
  }

  /** A parsed snapshot id. */
  record SnapshotId(VolumeId volume, String name) {
    /** {@code dataset@name}. */
    String snapshot() {
      return volume.dataset() + "@" + name;
    }

    String id() {
      return volume.id() + "@" + name;
    }
  }

  static VolumeId parseVolume(String field, String id) {
    requireShape(field, id);
    if (id.indexOf('@') >= 0) {
      throw malformed(field, id, "a volume id has no '@' (that is a snapshot id)");
    }
    return volume(field, id, id.substring(PREFIX.length()));
  }

  static SnapshotId parseSnapshot(String field, String id) {
    requireShape(field, id);
    int at = id.indexOf('@');
    if (at < 0 || at != id.lastIndexOf('@')) {
      throw malformed(field, id, "a snapshot id is <volume id>@snap-<name>");
    }
    VolumeId volume = volume(field, id, id.substring(PREFIX.length(), at));
    String name = id.substring(at + 1);
    if (!SNAPSHOT_LEAF.matcher(name).matches()) {
      throw malformed(field, id, "the snapshot name after '@' must be snap-<lower-case letters, digits, '-'>");
    }
    return new SnapshotId(volume, name);
  }

  private static void requireShape(String field, String id) {
    if (id.isEmpty()) {
      throw CsiException.invalid(field + " is required");
    }
    if (id.getBytes(StandardCharsets.UTF_8).length > IdRules.MAX_BYTES) {
      throw CsiException.invalid(field + " is longer than " + IdRules.MAX_BYTES + " bytes");
    }
    if (!id.startsWith(PREFIX)) {
      throw malformed(field, id, "ids of the local backend start with " + PREFIX);
    }
  }

  private static VolumeId volume(String field, String id, String rest) {
    String[] parts = rest.split("/", -1);
    if (parts.length < 4) {
      throw malformed(field, id, "expected " + PREFIX + "<node>/<pool>/<parent dataset>/vol-<name>");
    }
    if (!NODE.matcher(parts[0]).matches()) {
      throw malformed(field, id, "the node '" + IdRules.printable(parts[0]) + "' is not a node id");
    }
    if (!LocalConfig.POOL.matcher(parts[1]).matches()) {
      throw malformed(field, id, "the pool '" + IdRules.printable(parts[1]) + "' is not a pool name");
    }
    for (int i = 2; i < parts.length - 1; i++) {
      if (!LocalConfig.COMPONENT.matcher(parts[i]).matches()) {
        throw malformed(field, id, "dataset component '" + IdRules.printable(parts[i])
            + "' is not allowed (letters, digits, '_', '-', '.', ':', starting with a letter or digit)");
      }
    }
    String leaf = parts[parts.length - 1];
    if (!VOLUME_LEAF.matcher(leaf).matches()) {
      throw malformed(field, id, "the volume name '" + IdRules.printable(leaf)
          + "' must be vol-<lower-case letters, digits, '-'>");
    }
    String parent = String.join("/", List.of(parts).subList(2, parts.length - 1));
    return new VolumeId(parts[0], parts[1], parent, leaf);
  }

  private static CsiException malformed(String field, String id, String rule) {
    return CsiException.invalid(field + " '" + IdRules.printable(id) + "' is malformed: " + rule);
  }

  // ---- issuing ---------------------------------------------------------------------------------

  /**
   * The id of the volume the CO calls {@code name}, on {@code node} in {@code pool}: its leaf is
   * {@code vol-<slug>-<hash>}, the slug shortened (or dropped) so the id stays within {@link
   * #VOLUME_ID_MAX} bytes.
   */
  static VolumeId volumeFor(String node, String pool, String parent, String name) {
    String prefix = PREFIX + node + "/" + pool + "/" + parent + "/";
    String leaf = leaf("vol-", name, VOLUME_ID_MAX - prefix.length());
    return new VolumeId(node, pool, parent, leaf);
  }

  static String snapshotNameFor(VolumeId volume, String name) {
    return leaf("snap-", name, IdRules.MAX_BYTES - volume.id().length() - 1);
  }

  /** The longest id prefix this configuration produces must leave room for a hash-only leaf. */
  static void requireRoom(String node, String pool, String parent) {
    String prefix = PREFIX + node + "/" + pool + "/" + parent + "/";
    if (prefix.length() + "vol-".length() + 12 > VOLUME_ID_MAX) {
      throw new IllegalArgumentException(
          "node id '" + node + "', pool '" + pool + "' and parent dataset '" + parent + "' are too long"
              + " together: volume ids (" + prefix + "vol-...) must fit CSI's 128 bytes with room for"
              + " snapshot names; shorten local.parent-dataset or the node id");
    }
  }

  private static String leaf(String kind, String name, int budget) {
    String hash = hash(name);
    int slugRoom = Math.min(SLUG_MAX, budget - kind.length() - hash.length() - 1);
    StringBuilder slug = new StringBuilder();
    for (char c : name.toLowerCase(Locale.ROOT).toCharArray()) {
      if (slug.length() >= slugRoom) {
        break;
      }
      boolean ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
      if (ok) {
        slug.append(c);
      } else if (!slug.isEmpty() && slug.charAt(slug.length() - 1) != '-') {
        slug.append('-');
      }
    }
    while (!slug.isEmpty() && slug.charAt(slug.length() - 1) == '-') {
      slug.setLength(slug.length() - 1);
    }
    return slug.isEmpty() ? kind + hash : kind + slug + "-" + hash;
  }

  static String hash(String name) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(name.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest, 0, 6);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is always available", e);
    }
  }
}
