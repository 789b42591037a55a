package dev.caravan.csi.scenario.model;

import static io.grpc.Status.Code.ABORTED;
import static io.grpc.Status.Code.ALREADY_EXISTS;
import static io.grpc.Status.Code.FAILED_PRECONDITION;
import static io.grpc.Status.Code.INVALID_ARGUMENT;
import static io.grpc.Status.Code.NOT_FOUND;
import static io.grpc.Status.Code.OK;
import static io.grpc.Status.Code.UNAUTHENTICATED;

import io.grpc.Status.Code;
import java.util.EnumSet;
import java.util.Set;

/**
 * The answers csi-spec-rules.md allows for each RPC in each model state: its per-RPC error tables,
 * the general table (a missing field is INVALID_ARGUMENT), the idempotency table (a compatible repeat
 * is OK, an incompatible one ALREADY_EXISTS, an absent target of a delete or unstage OK) and the
 * second-publish table of §2.3. Where the spec is silent, the set says what Caravan documents and
 * names the silence; where it allows several codes, the set holds them all.
 */
final class ModelSpec {
  private ModelSpec() {}

  /** A REQUIRED field missing, or a value the plugin does not allow (a path outside its roots): §1.1. */
  static Set<Code> badField() {
    return EnumSet.of(INVALID_ARGUMENT);
  }

  /** A second, identical call made while the first runs: what that call may answer (§1.5: ABORTED is allowed). */
  static Set<Code> concurrent(Set<Code> alone) {
    EnumSet<Code> s = EnumSet.copyOf(alone);
    s.add(ABORTED);
    return s;
  }

  /**
   * CreateVolume: same name and request → OK, same name and another request → ALREADY_EXISTS (§1.4,
   * §2.2); of an encrypted volume as docs/encryption.md says. {@code encryption=on} where nothing
   * can encrypt: INVALID_ARGUMENT, whatever else holds. The passphrase missing: UNAUTHENTICATED (the
   * general table's row for missing secrets); for a repeat of a volume that exists, the spec's MUST-OK
   * meets that row and names no order (§3): either. A copy whose source's encryption is not the one
   * asked for: INVALID_ARGUMENT (both backends that encrypt document it, in both directions); a copy
   * whose passphrase is not its source's: UNAUTHENTICATED where the backend documents that check
   * (local); the file backend's docs do not say whether CreateVolume checks it (the copy opens with the
   * source's passphrase at stage), so there either. When several of these hold, the spec names no
   * order between them (§3): any of their codes.
   *
   * @param source the copy's source as the model holds it, when the request has one that exists: its
   *     encryption and key are a {@link ModelState.Snap} or {@link ModelState.Vol}'s
   */
  static Set<Code> create(ModelState m, String name, String request, int mode, boolean sourceExists, boolean encrypt,
      ModelStep.Secret secret, Keyed source) {
    if (encrypt && !m.crypto.encrypts()) {
      return EnumSet.of(INVALID_ARGUMENT);
    }
    boolean noSecret = encrypt && secret == ModelStep.Secret.NONE;
    ModelState.Vol v = m.volumes.get(name);
    if (v != null) {
      EnumSet<Code> repeat;
      // The spec's two lists of what makes a repeat incompatible differ (§1.4); both name the capacity
      // range, the capabilities and the content source. Another access type or size is incompatible;
      // another single-node access mode of a volume that serves both is left open: either answer.
      if (!v.request.equals(request)) {
        // A request that differs only in its size, for a volume that has since grown to at least that
        // size: the volume now satisfies it, so a plugin may call it compatible.
        String kind = request.substring(0, request.lastIndexOf(' '));
        long asked = Long.parseLong(request.substring(request.lastIndexOf(' ') + 1));
        boolean grownInto = v.request.substring(0, v.request.lastIndexOf(' ')).equals(kind) && v.bytes >= asked;
        repeat = grownInto ? EnumSet.of(OK, ALREADY_EXISTS) : EnumSet.of(ALREADY_EXISTS);
      } else {
        repeat = v.mode == mode ? EnumSet.of(OK) : EnumSet.of(OK, ALREADY_EXISTS);
      }
      if (noSecret || (encrypt && v.key != null && secret != v.key)) {
        repeat.add(UNAUTHENTICATED);
      }
      return repeat;
    }
    EnumSet<Code> errors = EnumSet.noneOf(Code.class);
    if (noSecret) {
      errors.add(UNAUTHENTICATED);
    }
    if (!sourceExists) {
      errors.add(NOT_FOUND);
    } else if (source != null) {
      if (source.encrypted() != encrypt) {
        errors.add(INVALID_ARGUMENT);
      } else if (encrypt && !noSecret && source.key() != null && secret != source.key()) {
        errors.add(UNAUTHENTICATED);
        if (!m.crypto.copyChecksKey()) {
          errors.add(OK);
        }
      }
    }
    // A clone's request reads "volume <source> <access type> <bytes>".
    Set<Code> copy = request.startsWith("volume ")
        ? liveCopy(m, request.substring("volume ".length(), request.indexOf(' ', "volume ".length())))
        : EnumSet.of(OK);
    if (errors.isEmpty()) {
      return copy;
    }
    copy.stream().filter(c -> c != OK).forEach(errors::add);
    return errors;
  }

  /** What a copy's source holds of encryption: whether it is encrypted, and the passphrase that opens it (null: none yet). */
  record Keyed(boolean encrypted, ModelStep.Secret key) {}

  /**
   * Whether {@code secret} fails to open an encrypted volume: missing, or not the passphrase it is keyed
   * with. A volume not keyed yet (a file volume before its first stage) takes whichever it is given.
   */
  static boolean keyRefused(ModelState.Vol v, ModelStep.Secret secret) {
    return v.encrypted && (secret == ModelStep.Secret.NONE || (v.key != null && secret != v.key));
  }

  /**
   * DeleteVolume: absent → OK; with snapshots → FAILED_PRECONDITION (Caravan refuses, so they cannot
   * be lost); staged or published on a node → FAILED_PRECONDITION ("being used": the spec leaves it
   * to the plugin, and Caravan refuses rather than delete storage under a mount).
   */
  static Set<Code> delete(ModelState m, String name) {
    ModelState.Vol v = m.volumes.get(name);
    if (v == null) {
      return EnumSet.of(OK);
    }
    if (m.hasSnapshots(name) || v.staged || !v.targets.isEmpty()) {
      return EnumSet.of(FAILED_PRECONDITION);
    }
    return EnumSet.of(OK);
  }

  /**
   * CreateSnapshot: same name and source → OK; same name, other source → ALREADY_EXISTS; an absent
   * source has no row (any error; NOT_FOUND is what a nonexistent id means everywhere else).
   */
  static Set<Code> snapshot(ModelState m, String snap, String source) {
    ModelState.Snap s = m.snapshots.get(snap);
    if (s != null) {
      return EnumSet.of(s.source().equals(source) ? OK : ALREADY_EXISTS);
    }
    if (!m.volumes.containsKey(source)) {
      return EnumSet.of(NOT_FOUND, INVALID_ARGUMENT);
    }
    return liveCopy(m, source);
  }

  /**
   * A point-in-time copy (snapshot or clone) of {@code source}: OK, or FAILED_PRECONDITION when it is a
   * staged block volume, which has no filesystem to freeze; the file backend refuses that copy on a
   * data directory without reflinks rather than cut one that writes could tear (its message says so).
   */
  static Set<Code> liveCopy(ModelState m, String source) {
    ModelState.Vol v = m.volumes.get(source);
    return v != null && v.block && v.staged ? EnumSet.of(OK, FAILED_PRECONDITION) : EnumSet.of(OK);
  }

  /** DeleteSnapshot: absent → OK; "in use" is FAILED_PRECONDITION and the spec is silent on whether a clone uses it. */
  static Set<Code> deleteSnapshot(ModelState m, String snap) {
    if (!m.snapshots.containsKey(snap)) {
      return EnumSet.of(OK);
    }
    return m.madeFrom(snap) ? EnumSet.of(OK, FAILED_PRECONDITION) : EnumSet.of(OK);
  }

  /**
   * ControllerExpandVolume: absent → NOT_FOUND; Caravan is ONLINE, so a published volume grows too. An
   * encrypted zvol grows only while its key is loaded: not staged, FAILED_PRECONDITION (local's docs).
   */
  static Set<Code> controllerExpand(ModelState m, String name) {
    ModelState.Vol v = m.volumes.get(name);
    if (v == null) {
      return EnumSet.of(NOT_FOUND);
    }
    return EnumSet.of(v.encrypted && m.crypto.growsOnlyStaged() && !v.staged ? FAILED_PRECONDITION : OK);
  }

  /**
   * NodeExpandVolume of a staged volume after its ControllerExpandVolume: OK; of an encrypted one whose
   * mapping must grow with the passphrase (file's docs: "with its own secrets"), a wrong or missing
   * one is UNAUTHENTICATED. local's docs say nothing of secrets there (the key is loaded already, and
   * NodeExpandVolume's secrets are an alpha field): either.
   */
  static Set<Code> nodeExpand(ModelState m, ModelState.Vol v, ModelStep.Secret secret) {
    if (!keyRefused(v, secret)) {
      return EnumSet.of(OK);
    }
    return m.crypto.nodeExpandOpensKey() ? EnumSet.of(UNAUTHENTICATED) : EnumSet.of(OK, UNAUTHENTICATED);
  }

  /**
   * NodeStageVolume: absent → NOT_FOUND; repeat with the same capability → OK; another capability →
   * ALREADY_EXISTS if staged there, else FAILED_PRECONDITION. An encrypted volume with a missing or
   * wrong passphrase: UNAUTHENTICATED (docs/encryption.md), beside any other error that holds (no order,
   * §3); a repeat of a stage that was done, with another passphrase, meets the spec's MUST-OK for a
   * compatible repeat (secrets are not among what makes a repeat compatible): either.
   */
  static Set<Code> stage(ModelState m, String name, boolean wrongAccessType, ModelStep.Secret secret) {
    ModelState.Vol v = m.volumes.get(name);
    if (v == null) {
      return EnumSet.of(NOT_FOUND);
    }
    EnumSet<Code> codes;
    if (wrongAccessType) {
      // Staged there with another capability (ALREADY_EXISTS) and a capability the volume does not
      // support (FAILED_PRECONDITION) both hold; the spec names no order (§3).
      codes = v.staged ? EnumSet.of(ALREADY_EXISTS, FAILED_PRECONDITION) : EnumSet.of(FAILED_PRECONDITION);
    } else {
      codes = EnumSet.of(OK);
    }
    if (keyRefused(v, secret)) {
      if (!(v.staged && !wrongAccessType)) {
        codes.remove(OK);
      }
      codes.add(UNAUTHENTICATED);
    }
    return codes;
  }

  /**
   * NodePublishVolume: absent → NOT_FOUND; not staged → FAILED_PRECONDITION (published only after
   * NodeStage); same target: same readonly → OK, other → ALREADY_EXISTS; another target (§2.3 table):
   * of a SINGLE_NODE_SINGLE_WRITER volume → FAILED_PRECONDITION, of a SINGLE_NODE_MULTI_WRITER one →
   * OK, of a SINGLE_NODE_WRITER one the table's SHOULD is FAILED_PRECONDITION while Caravan documents
   * OK (Nomad runs several allocations of one volume on a node, AccessMode#soleTarget): either.
   */
  static Set<Code> publish(ModelState m, String name, int target, boolean readOnly) {
    ModelState.Vol v = m.volumes.get(name);
    if (v == null) {
      return EnumSet.of(NOT_FOUND);
    }
    if (!v.staged) {
      return EnumSet.of(FAILED_PRECONDITION);
    }
    Boolean there = v.targets.get(target);
    if (there != null) {
      return EnumSet.of(there == readOnly ? OK : ALREADY_EXISTS);
    }
    if (!v.targets.isEmpty() && v.mode == ModelState.SOLE_WRITER) {
      return EnumSet.of(FAILED_PRECONDITION);
    }
    if (!v.targets.isEmpty() && v.mode == ModelState.SINGLE_WRITER) {
      return EnumSet.of(OK, FAILED_PRECONDITION);
    }
    return EnumSet.of(OK);
  }

  /**
   * NodeUnpublishVolume: MUST be idempotent, so a target not published is OK; for an absent volume the
   * NOT_FOUND row and idempotency clash (the spec is silent): either.
   */
  static Set<Code> unpublish(ModelState m, String name) {
    return m.volumes.containsKey(name) ? EnumSet.of(OK) : EnumSet.of(OK, NOT_FOUND);
  }

  /**
   * NodeUnstageVolume: not staged → OK; absent volume: NOT_FOUND row or nothing staged (OK); under
   * live targets the CO never calls it, and Caravan refuses with FAILED_PRECONDITION rather than pull
   * the filesystem from under them.
   */
  static Set<Code> unstage(ModelState m, String name) {
    ModelState.Vol v = m.volumes.get(name);
    if (v == null) {
      return EnumSet.of(OK, NOT_FOUND);
    }
    return EnumSet.of(v.targets.isEmpty() ? OK : FAILED_PRECONDITION);
  }

  /** NodeExpandVolume / NodeGetVolumeStats at a path where the volume is staged or published: OK; elsewhere NOT_FOUND. */
  static Set<Code> atVolumePath(ModelState m, String name, boolean pathIsTheVolumes) {
    return EnumSet.of(m.volumes.containsKey(name) && pathIsTheVolumes ? OK : NOT_FOUND);
  }

  /** NodePublishVolume without staging_target_path while STAGE_UNSTAGE_VOLUME is advertised: its own row (§3). */
  static Set<Code> publishWithoutStaging() {
    return EnumSet.of(FAILED_PRECONDITION);
  }
}
