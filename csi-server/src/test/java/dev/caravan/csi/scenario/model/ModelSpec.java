package dev.caravan.csi.scenario.model;

import static io.grpc.Status.Code.ABORTED;
import static io.grpc.Status.Code.ALREADY_EXISTS;
import static io.grpc.Status.Code.FAILED_PRECONDITION;
import static io.grpc.Status.Code.INVALID_ARGUMENT;
import static io.grpc.Status.Code.NOT_FOUND;
import static io.grpc.Status.Code.OK;

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

  /** CreateVolume: same name and request → OK, same name and another request → ALREADY_EXISTS (§1.4, §2.2). */
  static Set<Code> create(ModelState m, String name, String request, int mode, boolean sourceExists) {
    ModelState.Vol v = m.volumes.get(name);
    if (v != null) {
      // The spec's two lists of what makes a repeat incompatible differ (§1.4); both name the capacity
      // range, the capabilities and the content source. Another access type or size is incompatible;
      // another single-node access mode of a volume that serves both is left open: either answer.
      if (!v.request.equals(request)) {
        // A request that differs only in its size, for a volume that has since grown to at least that
        // size: the volume now satisfies it, so a plugin may call it compatible.
        String kind = request.substring(0, request.lastIndexOf(' '));
        long asked = Long.parseLong(request.substring(request.lastIndexOf(' ') + 1));
        boolean grownInto = v.request.substring(0, v.request.lastIndexOf(' ')).equals(kind) && v.bytes >= asked;
        return grownInto ? EnumSet.of(OK, ALREADY_EXISTS) : EnumSet.of(ALREADY_EXISTS);
      }
      return v.mode == mode ? EnumSet.of(OK) : EnumSet.of(OK, ALREADY_EXISTS);
    }
    if (!sourceExists) {
      return EnumSet.of(NOT_FOUND);
    }
    // A clone's request reads "volume <source> <access type> <bytes>".
    return request.startsWith("volume ")
        ? liveCopy(m, request.substring("volume ".length(), request.indexOf(' ', "volume ".length())))
        : EnumSet.of(OK);
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

  /** ControllerExpandVolume: absent → NOT_FOUND; Caravan is ONLINE, so a published volume grows too. */
  static Set<Code> controllerExpand(ModelState m, String name) {
    return EnumSet.of(m.volumes.containsKey(name) ? OK : NOT_FOUND);
  }

  /** NodeStageVolume: absent → NOT_FOUND; repeat with the same capability → OK; another capability → ALREADY_EXISTS if staged there, else FAILED_PRECONDITION. */
  static Set<Code> stage(ModelState m, String name, boolean wrongAccessType) {
    ModelState.Vol v = m.volumes.get(name);
    if (v == null) {
      return EnumSet.of(NOT_FOUND);
    }
    if (wrongAccessType) {
      // Staged there with another capability (ALREADY_EXISTS) and a capability the volume does not
      // support (FAILED_PRECONDITION) both hold; the spec names no order (§3).
      return v.staged ? EnumSet.of(ALREADY_EXISTS, FAILED_PRECONDITION) : EnumSet.of(FAILED_PRECONDITION);
    }
    return EnumSet.of(OK);
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
