package dev.caravan.csi.scenario.model;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * What should be true, by name: the volumes and snapshots the plugin holds, how each volume is staged
 * and published on this node, how many fsynced records each one carries, and the DHV volumes. It
 * changes only when a call answered OK; {@link ModelSpec} reads it to say which answers the spec
 * allows, {@link ModelChecks} compares it with the host.
 */
final class ModelState {
  /**
   * Access modes the model uses: SINGLE_NODE_WRITER (Caravan allows several targets on the node, as
   * Nomad runs several allocations of one volume there: AccessMode#soleTarget), SINGLE_NODE_MULTI_WRITER
   * (several targets by definition) and SINGLE_NODE_SINGLE_WRITER (one target, one writer).
   */
  static final int SINGLE_WRITER = 0;
  static final int MULTI_WRITER = 1;
  static final int SOLE_WRITER = 2;

  static final class Vol {
    final String name;
    final String id;
    final Map<String, String> context;
    final boolean block;
    final int mode;
    /** What CreateVolume asked, to tell a compatible repeat from an incompatible one. */
    final String request;
    long bytes;
    /** Records appended through a publish target and fsynced: they must all read back. */
    long records;
    /** Whether it holds a filesystem (mount access, once staged or copied from one that did). */
    boolean formatted;
    boolean staged;
    /** Published targets by number, each read-only or not. */
    final Map<Integer, Boolean> targets = new TreeMap<>();
    /** Whether ControllerPublish admitted this node (on a backend whose fence that is). */
    boolean fenced;
    /** The snapshot it was made from, if any (that snapshot may then count as in use). */
    final String fromSnapshot;
    /** Made with {@code encryption=on}. */
    final boolean encrypted;
    /**
     * The passphrase that opens it, once it has one: an encrypted zvol has it from CreateVolume, a file
     * volume's LUKS2 header from its first NodeStageVolume (whose passphrase formats it), a copy from
     * its source. Null for a plain volume and for an encrypted one not keyed yet.
     */
    ModelStep.Secret key;

    Vol(String name, String id, Map<String, String> context, boolean block, int mode, String request, long bytes,
        String fromSnapshot, boolean encrypted, ModelStep.Secret key) {
      this.name = name;
      this.encrypted = encrypted;
      this.key = key;
      this.id = id;
      this.context = Map.copyOf(context);
      this.block = block;
      this.mode = mode;
      this.request = request;
      this.bytes = bytes;
      this.fromSnapshot = fromSnapshot;
    }

    boolean hasWritableTarget() {
      return targets.containsValue(false);
    }
  }

  record Snap(String name, String id, String source, boolean block, long bytes, long records, boolean formatted,
      boolean encrypted, ModelStep.Secret key) {}

  /**
   * What docs/encryption.md says of a backend's encrypted volumes, as far as the model needs it.
   *
   * @param encrypts {@code encryption=on} is honoured here; otherwise it is INVALID_ARGUMENT, naming why
   *     (the file backend on a host without dm-crypt)
   * @param keyedAtCreate CreateVolume sets the key (ZFS); else the first NodeStageVolume does (LUKS2 on an
   *     empty device)
   * @param copyChecksKey CreateVolume of a copy checks its passphrase against the source's (local:
   *     UNAUTHENTICATED for another one)
   * @param growsOnlyStaged ControllerExpandVolume of an encrypted volume that is not staged is
   *     FAILED_PRECONDITION (ZFS grows an encrypted zvol only while its key is loaded)
   * @param nodeExpandOpensKey NodeExpandVolume needs the passphrase to grow the mapping (LUKS2), so a
   *     wrong or missing one is UNAUTHENTICATED
   */
  record Crypto(boolean encrypts, boolean keyedAtCreate, boolean copyChecksKey, boolean growsOnlyStaged,
      boolean nodeExpandOpensKey) {
    static Crypto of(String driver, boolean encrypts) {
      return switch (driver) {
        case "local" -> new Crypto(encrypts, true, true, true, false);
        case "file" -> new Crypto(encrypts, false, false, false, true);
        default -> new Crypto(false, false, false, false, false);
      };
    }
  }

  final Crypto crypto;

  final Map<String, Vol> volumes = new TreeMap<>();
  final Map<String, Snap> snapshots = new TreeMap<>();
  /** Ids of volumes and snapshots once held and since deleted, by name: calls on them meet an absent id. */
  final Map<String, String> formerIds = new TreeMap<>();
  /** DHV volumes by name, each mounted at its path. */
  final Set<String> dhv = new TreeSet<>();

  ModelState(Crypto crypto) {
    this.crypto = crypto;
  }

  boolean hasSnapshots(String volume) {
    return snapshots.values().stream().anyMatch(s -> s.source().equals(volume));
  }

  boolean madeFrom(String snapshot) {
    return volumes.values().stream().anyMatch(v -> snapshot.equals(v.fromSnapshot));
  }

  long stagedCount() {
    return volumes.values().stream().filter(v -> v.staged).count();
  }

  /** Encrypted volumes whose key is open on the node now: the staged ones (a loaded ZFS key, an open LUKS2 mapping). */
  Set<String> openKeys() {
    Set<String> ids = new TreeSet<>();
    volumes.values().stream().filter(v -> v.encrypted && v.staged).forEach(v -> ids.add(v.id));
    return ids;
  }
}
