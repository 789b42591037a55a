package dev.caravan.csi.backend.local;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.IdShape;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
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
 * is at most 128 bytes. An id that fails is one this backend never issues: the services answer it as
 * absent ({@link #volumeShape}), so it never becomes a dataset name. Whether the dataset is inside
 * this node's parent dataset is checked when the id is resolved ({@link LocalController}), because
 * only the owner node knows its configuration.
 */
final class LocalIds {
  static final String PREFIX = "local/v1/";

  /** Node ids: what NodeGetInfo reports; hostnames and Nomad node ids fit. No '/', no '@'. */
  static final Pattern NODE = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}");

  static final Pattern VOLUME_LEAF = Pattern.compile("vol-[a-z0-9]+(-[a-z0-9]+)*");
  static final Pattern SNAPSHOT_LEAF = Pattern.compile("snap-[a-z0-9]+(-[a-z0-9]+)*");
  /** A replica of another node's volume ({@link LocalReplication}); only in snapshot ids. */
  static final Pattern REPLICA_LEAF = Pattern.compile("rep-[0-9a-f]{12}(-b)?");
  /** A replication snapshot: the only snapshots of a replica that ids name. */
  static final Pattern REPLICATION_SNAPSHOT = Pattern.compile("repl-[0-9]{1,19}");

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

  /**
   * Whether {@code id} (already bounded: non-empty, at most 128 bytes, no NUL) has the form of a
   * volume id, and its lock key if so; nothing else is checked (not the node, not the scope).
   */
  static IdShape volumeShape(String id) {
    Reading<VolumeId> r = readVolume(id);
    return r.value() != null ? new IdShape.Ours(lockKey(r.value())) : new IdShape.NotOurs(r.problem());
  }

  /** As {@link #volumeShape} for snapshot ids. */
  static IdShape snapshotShape(String id) {
    Reading<SnapshotId> r = readSnapshot(id);
    return r.value() != null ? new IdShape.Ours(lockKey(r.value())) : new IdShape.NotOurs(r.problem());
  }

  /**
   * The lock key of a volume: its leaf's hash, which is the same in every pool the leaf could be in
   * (only the slug before it shortens with a longer prefix), so the CO's name yields it before the
   * pool is known ({@link #volumeLockKey(String)}).
   */
  static String lockKey(VolumeId v) {
    return "vol-*-" + v.leaf().substring(v.leaf().lastIndexOf('-') + 1);
  }

  /** Whether the snapshot id names a replica's snapshot, not a volume's. */
  static boolean isReplica(SnapshotId s) {
    return REPLICA_LEAF.matcher(s.volume().leaf()).matches();
  }

  static String lockKey(SnapshotId s) {
    return "snap-*-" + s.name().substring(s.name().lastIndexOf('-') + 1);
  }

  static String volumeLockKey(String name) {
    return "vol-*-" + IdRules.nameHash(name);
  }

  static String snapshotLockKey(String name) {
    return "snap-*-" + IdRules.nameHash(name);
  }

  /** The node a volume id names, if {@code id} has the form of one. */
  static Optional<String> volumeNode(String id) {
    return Optional.ofNullable(readVolume(id).value()).map(VolumeId::node);
  }

  /** The node a snapshot id names, if {@code id} has the form of one. */
  static Optional<String> snapshotNode(String id) {
    return Optional.ofNullable(readSnapshot(id).value()).map(s -> s.volume().node());
  }

  /** Parses an id that must be of this backend's form: INVALID_ARGUMENT naming {@code field} otherwise. */
  static VolumeId parseVolume(String field, String id) {
    IdRules.requireBounded(field, id);
    Reading<VolumeId> r = readVolume(id);
    if (r.value() == null) {
      throw malformed(field, id, r.problem());
    }
    return r.value();
  }

  static SnapshotId parseSnapshot(String field, String id) {
    IdRules.requireBounded(field, id);
    Reading<SnapshotId> r = readSnapshot(id);
    if (r.value() == null) {
      throw malformed(field, id, r.problem());
    }
    return r.value();
  }

  /** A parsed value, or (value null) the rule the text breaks. */
  private record Reading<T>(T value, String problem) {
    static <T> Reading<T> of(T value) {
      return new Reading<>(value, "");
    }

    static <T> Reading<T> not(String problem) {
      return new Reading<>(null, problem);
    }
  }

  private static Reading<VolumeId> readVolume(String id) {
    if (!id.startsWith(PREFIX)) {
      return Reading.not("ids of the local backend start with " + PREFIX);
    }
    if (id.indexOf('@') >= 0) {
      return Reading.not("a volume id has no '@' (that is a snapshot id)");
    }
    return volume(id.substring(PREFIX.length()));
  }

  private static Reading<SnapshotId> readSnapshot(String id) {
    if (!id.startsWith(PREFIX)) {
      return Reading.not("ids of the local backend start with " + PREFIX);
    }
    int at = id.indexOf('@');
    if (at < 0 || at != id.lastIndexOf('@')) {
      return Reading.not("a snapshot id is <volume id>@snap-<name>");
    }
    String name = id.substring(at + 1);
    String volumePart = id.substring(PREFIX.length(), at);
    String leaf = volumePart.substring(volumePart.lastIndexOf('/') + 1);
    if (REPLICA_LEAF.matcher(leaf).matches() && REPLICATION_SNAPSHOT.matcher(name).matches()) {
      // A replica's snapshot: its "volume" is the replica dataset, checked as a volume's would be.
      Reading<VolumeId> replica = volume(volumePart.substring(0, volumePart.length() - leaf.length()) + "vol-r");
      if (replica.value() == null) {
        return Reading.not(replica.problem());
      }
      VolumeId r = replica.value();
      return Reading.of(new SnapshotId(new VolumeId(r.node(), r.pool(), r.parent(), leaf), name));
    }
    Reading<VolumeId> volume = volume(volumePart);
    if (volume.value() == null) {
      return Reading.not(volume.problem());
    }
    if (!SNAPSHOT_LEAF.matcher(name).matches()) {
      return Reading.not("the snapshot name after '@' must be snap-<lower-case letters, digits, '-'>");
    }
    return Reading.of(new SnapshotId(volume.value(), name));
  }

  private static Reading<VolumeId> volume(String rest) {
    String[] parts = rest.split("/", -1);
    if (parts.length < 4) {
      return Reading.not("expected " + PREFIX + "<node>/<pool>/<parent dataset>/vol-<name>");
    }
    if (!NODE.matcher(parts[0]).matches()) {
      return Reading.not("the node '" + IdRules.printable(parts[0]) + "' is not a node id");
    }
    if (!LocalConfig.POOL.matcher(parts[1]).matches()) {
      return Reading.not("the pool '" + IdRules.printable(parts[1]) + "' is not a pool name");
    }
    for (int i = 2; i < parts.length - 1; i++) {
      if (!LocalConfig.COMPONENT.matcher(parts[i]).matches()) {
        return Reading.not("dataset component '" + IdRules.printable(parts[i])
            + "' is not allowed (letters, digits, '_', '-', '.', ':', starting with a letter or digit)");
      }
    }
    String leaf = parts[parts.length - 1];
    if (!VOLUME_LEAF.matcher(leaf).matches()) {
      return Reading.not("the volume name '" + IdRules.printable(leaf)
          + "' must be vol-<lower-case letters, digits, '-'>");
    }
    String parent = String.join("/", List.of(parts).subList(2, parts.length - 1));
    return Reading.of(new VolumeId(parts[0], parts[1], parent, leaf));
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
    String hash = IdRules.nameHash(name);
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
}
