package dev.caravan.csi.dhv;

/**
 * A DHV operation that failed, with the exit status the plugin ends with (see
 * docs/dhv-deferred-binding.md): Nomad treats every non-zero status alike, the distinction is for
 * people and for a future Nomad that may act on it.
 */
final class DhvException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The operation could not be done (host or storage failure); a retry may succeed. */
  static final int FAILED = 1;

  /** The request itself is wrong (environment, parameters); a retry of the same request fails again. */
  static final int INVALID = 2;

  /** The volume is published on another node (deferred mode, single writer). */
  static final int HELD_ELSEWHERE = 3;

  private final int exitStatus;

  DhvException(int exitStatus, String message) {
    super(message);
    this.exitStatus = exitStatus;
  }

  DhvException(int exitStatus, String message, Throwable cause) {
    super(message, cause);
    this.exitStatus = exitStatus;
  }

  static DhvException invalid(String message) {
    return new DhvException(INVALID, message);
  }

  static DhvException failed(String message) {
    return new DhvException(FAILED, message);
  }

  int exitStatus() {
    return exitStatus;
  }
}
