package dev.caravan.csi.backend.file;

import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.IdScheme;
import dev.caravan.csi.backend.IdShape;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Volume and snapshot ids derived from the CO's name: a readable slug plus 12 hex digits of the
 * name's SHA-256, e.g. {@code vol-mysql-data-3f2a9c0b1d4e}. Deriving the id from the name makes
 * CreateVolume idempotent without a name index, and lets a retry after a crash find the half-done
 * work. Ids contain only {@code [a-z0-9-]}, so they are safe as file names.
 */
final class FileIds {
  private static final int SLUG_MAX = 40;

  /** Every id {@link #volumeId} issues, and nothing else: no '/', '.', upper case or control character. */
  static final Pattern VOLUME = Pattern.compile("vol-(?:[a-z0-9]+-)*[0-9a-f]{12}");

  static final Pattern SNAPSHOT = Pattern.compile("snap-(?:[a-z0-9]+-)*[0-9a-f]{12}");

  /** A node id as a scoped id carries it: what NodeGetInfo reports (hostnames, Nomad node ids). */
  private static final String NODE = "[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}";

  /**
   * Ids issued with node-scoped ids on ({@code file.node-scoped-ids}, set when the plugin has peers):
   * the unscoped id, a '.', and the owner node, which group 1 captures. The unscoped part holds no '.'.
   */
  static final Pattern SCOPED_VOLUME = Pattern.compile("vol-(?:[a-z0-9]+-)*[0-9a-f]{12}\\.(" + NODE + ")");

  static final Pattern SCOPED_SNAPSHOT = Pattern.compile("snap-(?:[a-z0-9]+-)*[0-9a-f]{12}\\.(" + NODE + ")");

  /**
   * The newest copy of a replica held on a node, as a snapshot: {@code repl-<hash of the volume id>-<the owner's
   * milliseconds when it took the copy>}, and {@code .<node holding it>} with node-scoped ids. No CSI name makes
   * one: a snapshot id made from a name starts with {@code snap-}.
   */
  static final Pattern REPLICA_SNAPSHOT = Pattern.compile("repl-([0-9a-f]{12})-[0-9]{1,19}");

  static final Pattern SCOPED_REPLICA_SNAPSHOT = Pattern.compile("(repl-([0-9a-f]{12})-[0-9]{1,19})\\.(" + NODE + ")");

  static final String VOLUME_FORM = "volume ids of the file backend are vol-<name slug>-<12 hex digits>"
      + "[.<node>]";
  static final String SNAPSHOT_FORM = "snapshot ids of the file backend are snap-<name slug>-<12 hex digits>"
      + "[.<node>], or repl-<12 hex digits>-<digits>[.<node>] for a replica's copy";

  private FileIds() {}

  /**
   * The file backend's ids: derived from names, so the id itself is the lock key, for the name and
   * the id alike. With {@code node} (node-scoped ids) new ids end in ".<node>"; ids of either form are
   * the backend's, and a scoped one names its owner.
   */
  static IdScheme scheme(Optional<String> node) {
    String suffix = node.map(n -> "." + n).orElse("");
    return new IdScheme(
        id -> shape(id, VOLUME, SCOPED_VOLUME, VOLUME_FORM),
        id -> replicaSnapshot(id).isPresent() ? new IdShape.Ours(id)
            : shape(id, SNAPSHOT, SCOPED_SNAPSHOT, SNAPSHOT_FORM),
        name -> volumeId(name) + suffix,
        name -> snapshotId(name) + suffix,
        id -> owner(id, SCOPED_VOLUME),
        id -> {
          Matcher m = SCOPED_REPLICA_SNAPSHOT.matcher(id);
          return m.matches() ? Optional.of(m.group(3)) : owner(id, SCOPED_SNAPSHOT);
        });
  }

  /** The hash of the volume id in a replica copy's snapshot id; empty when {@code id} is not one. */
  static Optional<String> replicaSnapshot(String id) {
    Matcher scoped = SCOPED_REPLICA_SNAPSHOT.matcher(id);
    if (scoped.matches()) {
      return Optional.of(scoped.group(2));
    }
    Matcher m = REPLICA_SNAPSHOT.matcher(id);
    return m.matches() ? Optional.of(m.group(1)) : Optional.empty();
  }

  private static IdShape shape(String id, Pattern unscoped, Pattern scoped, String form) {
    return unscoped.matcher(id).matches() || scoped.matcher(id).matches()
        ? new IdShape.Ours(id)
        : new IdShape.NotOurs(form);
  }

  private static Optional<String> owner(String id, Pattern scoped) {
    Matcher m = scoped.matcher(id);
    return m.matches() ? Optional.of(m.group(1)) : Optional.empty();
  }

  static String volumeId(String name) {
    return "vol-" + slugAndHash(name);
  }

  static String snapshotId(String name) {
    return "snap-" + slugAndHash(name);
  }

  private static String slugAndHash(String name) {
    StringBuilder slug = new StringBuilder();
    for (char c : name.toLowerCase(Locale.ROOT).toCharArray()) {
      boolean ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
      if (ok) {
        slug.append(c);
      } else if (!slug.isEmpty() && slug.charAt(slug.length() - 1) != '-') {
        slug.append('-');
      }
      if (slug.length() >= SLUG_MAX) {
        break;
      }
    }
    if (!slug.isEmpty() && slug.charAt(slug.length() - 1) != '-') {
      slug.append('-');
    }
    return slug + IdRules.nameHash(name);
  }
}
