package dev.caravan.storage.iscsi;

import dev.caravan.storage.StorageException;

/** A discovery or login was refused or failed, with the reason iscsiadm gave (its exit code). */
public final class IscsiLoginException extends StorageException {
  private static final long serialVersionUID = 1L;

  /** Why, from iscsiadm's exit code ({@code ISCSI_ERR_*} in open-iscsi's {@code iscsi_err.h}). */
  public enum Reason {
    /** The target rejected the CHAP credentials (24), or demanded some and got none. */
    AUTHENTICATION_FAILED,
    /** The target refused the login for good: no such target, or this initiator is not allowed (19). */
    REFUSED,
    /** No answer from the portal: connection refused, unreachable, timed out (4, 8, 29). */
    UNREACHABLE,
    /** iscsid is not running or not answering (18, 20). */
    ISCSID_UNAVAILABLE,
    /** Anything else; the message carries iscsiadm's words. */
    OTHER
  }

  private final Reason reason;
  private final int exitCode;

  IscsiLoginException(Reason reason, int exitCode, String message, Throwable cause) {
    super(message, cause);
    this.reason = reason;
    this.exitCode = exitCode;
  }

  public Reason reason() {
    return reason;
  }

  /** iscsiadm's exit code; -1 when it timed out or could not start. */
  public int exitCode() {
    return exitCode;
  }
}
