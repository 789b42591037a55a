package dev.caravan.csi.scenario.fuzz;

import io.grpc.Status.Code;
import java.util.EnumSet;
import java.util.Set;

/**
 * The RPCs the fuzz sends bad requests to, each with the non-OK codes csi-spec-rules.md documents
 * for it: the general table's INVALID_ARGUMENT plus the rows of its own table (§2). ABORTED (a call
 * already pending for the volume) is left out: the fuzz sends one call at a time, so nothing is ever
 * pending; it stays documented only where it means "bad page token".
 */
enum FuzzRpc {
  CREATE_VOLUME(false, Code.NOT_FOUND, Code.ALREADY_EXISTS, Code.RESOURCE_EXHAUSTED, Code.OUT_OF_RANGE),
  /** Absent volume → MUST OK. */
  DELETE_VOLUME(true, Code.FAILED_PRECONDITION),
  VALIDATE_VOLUME_CAPABILITIES(false, Code.NOT_FOUND),
  LIST_VOLUMES(false, Code.ABORTED),
  GET_CAPACITY(false),
  /** The spec is silent on a missing source; NOT_FOUND is what "does not exist" means everywhere else. */
  CREATE_SNAPSHOT(false, Code.NOT_FOUND, Code.ALREADY_EXISTS, Code.RESOURCE_EXHAUSTED),
  /** Absent snapshot → MUST OK. */
  DELETE_SNAPSHOT(true, Code.FAILED_PRECONDITION),
  LIST_SNAPSHOTS(false, Code.ABORTED),
  /** Growing past what the pool holds matches no row ("any non-OK"); RESOURCE_EXHAUSTED names it. */
  CONTROLLER_EXPAND_VOLUME(false, Code.NOT_FOUND, Code.FAILED_PRECONDITION, Code.OUT_OF_RANGE, Code.RESOURCE_EXHAUSTED),
  CONTROLLER_GET_VOLUME(false, Code.NOT_FOUND),
  NODE_STAGE_VOLUME(false, Code.NOT_FOUND, Code.ALREADY_EXISTS, Code.FAILED_PRECONDITION),
  /** Not staged there → MUST OK. */
  NODE_UNSTAGE_VOLUME(true, Code.NOT_FOUND),
  NODE_PUBLISH_VOLUME(false, Code.NOT_FOUND, Code.ALREADY_EXISTS, Code.FAILED_PRECONDITION),
  /** Idempotent: a target where the volume is not published is OK, an unknown volume NOT_FOUND. */
  NODE_UNPUBLISH_VOLUME(true, Code.NOT_FOUND),
  NODE_GET_VOLUME_STATS(false, Code.NOT_FOUND),
  NODE_EXPAND_VOLUME(false, Code.NOT_FOUND, Code.FAILED_PRECONDITION, Code.OUT_OF_RANGE),
  /** Not offered (no capability advertised): UNIMPLEMENTED whatever the request holds. */
  NOT_OFFERED(false);

  /** Whether a well-formed request for something that does not exist is answered OK (nothing to undo). */
  final boolean okWhenAbsent;

  private final com.google.common.collect.ImmutableSet<Code> documented;

  FuzzRpc(boolean okWhenAbsent, Code... rows) {
    this.okWhenAbsent = okWhenAbsent;
    this.documented = com.google.common.collect.Sets.immutableEnumSet(Code.INVALID_ARGUMENT, rows);
  }

  /** The non-OK codes this RPC may answer a bad request with. */
  Set<Code> documented() {
    return this == NOT_OFFERED ? EnumSet.of(Code.UNIMPLEMENTED) : EnumSet.copyOf(documented);
  }
}
