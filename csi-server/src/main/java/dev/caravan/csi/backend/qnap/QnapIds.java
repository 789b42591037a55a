package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.IdShape;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Ids of the {@code qnap} backend. They carry names, never appliance indices, because the appliance
 * reuses indices: an id resolves by listing, and every destructive call re-checks the name at the
 * index it is about to touch.
 *
 * <pre>
 *   volume:   qnap/v1/cv&lt;f&gt;&lt;a&gt;&lt;l&gt;-&lt;slug&gt;-&lt;hash&gt;              (the LUN's name, which is also its target's name and alias)
 *   snapshot: qnap/v1/cv&lt;f&gt;&lt;a&gt;&lt;l&gt;-&lt;slug&gt;-&lt;hash&gt;@cs-&lt;slug&gt;-&lt;hash&gt;
 * </pre>
 *
 * {@code <f>} is the volume's filesystem ({@code e} ext4, {@code x} xfs): the appliance keeps no
 * metadata of Caravan's, and this is how ListVolumes and ControllerGetVolume answer the same context
 * as CreateVolume did. {@code <a>} is the access types it was created for, for the same reason:
 * {@code m} mount only, {@code b} block only, nothing for both (which is also what a volume made
 * before access types were recorded allows). {@code <l>} is {@code l} for a volume made with {@code
 * encryption=on} (LUKS2 on the LUN, written by the node at its first stage), nothing otherwise: the
 * node and a copy's CreateVolume learn it from the id, and it lives on the appliance as long as the
 * LUN does. {@code <hash>} is 12 hex digits of the SHA-256 of the CO's name, the slug a
 * readable prefix of it; the hash alone is the lock key, so the key is known from the name before
 * the filesystem is.
 */
final class QnapIds {
  static final String PREFIX = "qnap/v1/";
  static final Pattern LUN_NAME = Pattern.compile("cv([ex])([mb]?)(l?)(-[a-z0-9]+)*-([0-9a-f]{12})");
  static final Pattern SNAP_NAME = Pattern.compile("cs(-[a-z0-9]+)*-([0-9a-f]{12})");
  /** Snapshots Caravan takes of a source volume to copy it into a clone, named from the clone. */
  static final Pattern CLONE_SNAP_NAME = Pattern.compile("ct-([0-9a-f]{12})");
  private static final Pattern INITIATOR = Pattern.compile(
      "iqn\\.[0-9]{4}-[0-9]{2}\\.[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[\\x21-\\x7e]{1,200})?|eui\\.[0-9A-Fa-f]{16}"
          + "|naa\\.([0-9A-Fa-f]{16}|[0-9A-Fa-f]{32})");
  private static final int SLUG_MAX = 24;

  private QnapIds() {}

  /**
   * A volume id read: the LUN's name, the filesystem and access types it was created for, and whether
   * it is encrypted (LUKS2 on the LUN).
   */
  record VolumeId(String lunName, String fsType, String hash, Set<AccessType> access, boolean encrypted) {
    VolumeId {
      access = Set.copyOf(access);
    }

    String id() {
      return PREFIX + lunName;
    }
  }

  record SnapshotId(VolumeId volume, String snapName, String hash) {
    String id() {
      return volume.id() + "@" + snapName;
    }
  }

  static Optional<VolumeId> volume(String id) {
    return id.startsWith(PREFIX) ? lun(id.substring(PREFIX.length())) : Optional.empty();
  }

  /** A LUN name of Caravan's form, read. */
  static Optional<VolumeId> lun(String name) {
    Matcher m = LUN_NAME.matcher(name);
    if (!m.matches()) {
      return Optional.empty();
    }
    Set<AccessType> access = switch (m.group(2)) {
      case "m" -> Set.of(AccessType.MOUNT);
      case "b" -> Set.of(AccessType.BLOCK);
      default -> Set.of(AccessType.values());
    };
    return Optional.of(new VolumeId(name, m.group(1).equals("x") ? "xfs" : "ext4", m.group(5), access,
        m.group(3).equals("l")));
  }

  static Optional<SnapshotId> snapshot(String id) {
    int at = id.indexOf('@');
    if (at < 0) {
      return Optional.empty();
    }
    Matcher m = SNAP_NAME.matcher(id.substring(at + 1));
    if (!m.matches()) {
      return Optional.empty();
    }
    return volume(id.substring(0, at)).map(v -> new SnapshotId(v, id.substring(at + 1), m.group(2)));
  }

  static final String VOLUME_RULE = "ids of the qnap backend are " + PREFIX + "cv<e|x>[m|b][l]-<name>-<12 hex digits>";
  static final String SNAPSHOT_RULE = "snapshot ids of the qnap backend are <volume id>@cs-<name>-<12 hex digits>";

  static IdShape volumeShape(String id) {
    return volume(id).<IdShape>map(v -> new IdShape.Ours(volumeLockKeyOfHash(v.hash())))
        .orElse(new IdShape.NotOurs(VOLUME_RULE));
  }

  static IdShape snapshotShape(String id) {
    return snapshot(id).<IdShape>map(s -> new IdShape.Ours(snapshotLockKeyOfHash(s.hash())))
        .orElse(new IdShape.NotOurs(SNAPSHOT_RULE));
  }

  static String volumeLockKey(String coName) {
    return volumeLockKeyOfHash(IdRules.nameHash(coName));
  }

  static String snapshotLockKey(String coName) {
    return snapshotLockKeyOfHash(IdRules.nameHash(coName));
  }

  private static String volumeLockKeyOfHash(String hash) {
    return "qnap-" + hash;
  }

  private static String snapshotLockKeyOfHash(String hash) {
    return "qnaps-" + hash;
  }

  /** The LUN name for the CO's volume name. */
  static VolumeId volumeFor(String coName, String fsType, Set<AccessType> access, boolean encrypted) {
    String hash = IdRules.nameHash(coName);
    String a = access.size() != 1 ? "" : access.contains(AccessType.MOUNT) ? "m" : "b";
    String name = "cv" + (fsType.equals("xfs") ? "x" : "e") + a + (encrypted ? "l" : "") + slug(coName) + "-" + hash;
    return new VolumeId(name, fsType, hash, access, encrypted);
  }

  static SnapshotId snapshotFor(VolumeId volume, String coName) {
    String hash = IdRules.nameHash(coName);
    return new SnapshotId(volume, "cs" + slug(coName) + "-" + hash, hash);
  }

  /** The snapshot a clone of a volume is copied from, named from the clone's own hash. */
  static String cloneSnapshotName(VolumeId clone) {
    return "ct-" + clone.hash();
  }

  /** Whether {@code nodeId} is an iSCSI initiator name (the qnap backend's node ids are). */
  static boolean isInitiator(String nodeId) {
    return INITIATOR.matcher(nodeId).matches();
  }

  /** "-" plus lower-case letters and digits of the name, '-' between runs, at most 24; "" when none. */
  private static String slug(String name) {
    StringBuilder s = new StringBuilder();
    for (char c : name.toLowerCase(Locale.ROOT).toCharArray()) {
      if (s.length() >= SLUG_MAX) {
        break;
      }
      if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
        s.append(c);
      } else if (!s.isEmpty() && s.charAt(s.length() - 1) != '-') {
        s.append('-');
      }
    }
    while (!s.isEmpty() && s.charAt(s.length() - 1) == '-') {
      s.setLength(s.length() - 1);
    }
    return s.isEmpty() ? "" : "-" + s;
  }
}
