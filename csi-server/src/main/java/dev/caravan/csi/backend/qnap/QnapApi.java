package dev.caravan.csi.backend.qnap;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * What Caravan asks of a QNAP appliance, in domain terms, over either transport ({@link CgiApi} for
 * QTS 5.x and QuTS hero h5, {@link RestApi} for hero h5/h6). Implementations handle the session
 * (lazy login, one re-login on expiry) and the appliance's quirks: every destructive call first
 * re-reads the object it targets by index and refuses if the name there is not the expected one
 * (indices are reused), and asynchronous operations are polled with bounded backoff. Failures are
 * {@link dev.caravan.csi.backend.CsiException}s whose message keeps the appliance's own code and words.
 */
interface QnapApi extends AutoCloseable {
  /** Model, firmware and whether it is QuTS hero (ZFS). Also proves the session works. */
  Appliance appliance();

  List<Lun> luns();

  /** The LUN at {@code index}, as the appliance reports it now (ghost rows included). */
  Optional<Lun> lun(int index);

  /** Creates a block LUN and waits (bounded) until it is ready; returns it as then listed. */
  Lun createLun(String name, long gib, int poolId, boolean thin);

  /** Waits (bounded) until a LUN found still creating is ready. */
  Lun awaitReady(Lun lun);

  /** Grows {@code lun} (name-checked) to {@code gib} and waits until the appliance reports the size. */
  Lun resizeLun(Lun lun, long gib);

  /** Deletes {@code lun} (name-checked) and waits, bounded, until it is gone or a ghost row. */
  void deleteLun(Lun lun);

  /** Every target (the list carries no ACL: see {@link #acl}). */
  List<Target> targets();

  /**
   * The initiator IQNs {@code target}'s ACL admits, read from the target's detail after checking that
   * its index still holds that target name.
   */
  List<String> acl(Target target);

  /** Creates a target named (and aliased) {@code name}; returns it as then listed. */
  Target createTarget(String name);

  /** Deletes {@code target} after checking that its index still holds that name and alias. */
  void deleteTarget(Target target);

  /** Maps {@code lun} to {@code target}; returns the per-target LUN number. */
  int map(Lun lun, Target target);

  /** Unmaps {@code lun} (name-checked) from {@code target}. */
  void unmap(Lun lun, Target target);

  /**
   * What {@code target} does with an initiator its ACL does not list: its Default Policy (ACL row 0),
   * as the appliance reports it now (target name-checked).
   */
  DefaultPolicy defaultPolicy(Target target);

  /** Sets {@code target}'s Default Policy to deny every initiator its ACL does not list (name-checked). */
  void denyByDefault(Target target);

  /** Adds {@code initiatorIqn} to the target's ACL, with CHAP when given. */
  void allow(Target target, String initiatorIqn, Optional<Chap> chap);

  /** Removes {@code initiatorIqn} from the target's ACL (target name-checked). */
  void disallow(Target target, String initiatorIqn);

  List<Snap> snapshots(Lun lun);

  /** Takes a crash-consistent snapshot of {@code lun} that never expires. */
  Snap createSnapshot(Lun lun, String name);

  /** Deletes {@code snap} of {@code lun} (LUN name-checked) and waits, bounded, until it is gone. */
  void deleteSnapshot(Lun lun, Snap snap);

  /**
   * Makes a new LUN {@code newName} from {@code snap} (a full copy; {@code instant} asks QuTS hero
   * for a copy-on-write clone) and waits until it is listed and ready.
   */
  Lun cloneSnapshot(Lun source, Snap snap, String newName, int poolId, boolean instant);

  Pool pool(int poolId);

  /** Logs out if logged in. */
  @Override
  void close();

  /** Firmware facts from the login CGI. */
  record Appliance(String model, String firmware, boolean hero) {}

  /** How far a LUN is: the appliance's status words mapped to what Caravan needs to know. */
  enum LunState {
    CREATING,
    READY,
    REMOVING,
    /** A removed index that still answers: empty name, no capacity. */
    GHOST
  }

  /**
   * A LUN.
   *
   * @param naa the LUN's NAA identifier (32 hex digits) once the appliance assigned it, else ""
   * @param volumeRef the REST API's storage volume id (hero), "" on the CGI
   * @param mappings per-target LUN numbers
   */
  record Lun(
      int index, String name, long capacityBytes, boolean thin, int poolId, LunState state, String naa,
      String volumeRef, List<Mapping> mappings) {
    public Lun {
      mappings = List.copyOf(mappings);
    }

    boolean present() {
      return state != LunState.GHOST && state != LunState.REMOVING && !name.isEmpty();
    }
  }

  record Mapping(int targetIndex, int lunNumber) {}

  /** A target: the appliance builds its IQN from the name; the alias is where Caravan marks ownership. */
  record Target(int index, String name, String iqn, String alias, List<Integer> lunIndexes) {
    public Target {
      lunIndexes = List.copyOf(lunIndexes);
    }
  }

  /**
   * A snapshot of one LUN.
   *
   * @param ready the appliance reports it complete
   */
  record Snap(long id, String name, Instant createdAt, boolean ready) {}

  record Pool(int id, long capacityBytes, long freeBytes, long maxThickBytes, boolean ready) {}

  /** The access QNAP's Default Policy grants: its three values, and "the answer does not say". */
  enum Access {
    READ_WRITE,
    READ_ONLY,
    DENY,
    /** The appliance's answer has no value Caravan knows: nothing is proven, so it counts as admitting. */
    UNPROVEN
  }

  /**
   * A target's Default Policy.
   *
   * @param reported what the appliance answered, in its own terms, for messages
   */
  record DefaultPolicy(Access access, String reported) {
    boolean denies() {
      return access == Access.DENY;
    }
  }

  /** CHAP for one initiator row; the secrets are never logged (toString hides them). */
  record Chap(String user, String password, Optional<String> mutualUser, Optional<String> mutualPassword) {
    @Override
    public String toString() {
      return "Chap[user=" + user + ", mutual=" + mutualUser.isPresent() + ", secrets hidden]";
    }
  }
}
