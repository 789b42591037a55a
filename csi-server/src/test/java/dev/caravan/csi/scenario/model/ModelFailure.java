package dev.caravan.csi.scenario.model;

/**
 * An invariant the model found broken. {@link #kind} names the invariant and where (e.g. "spec code of
 * NodePublishVolume"): a shrunk sequence must break the same one, not merely fail.
 */
final class ModelFailure extends AssertionError {
  private static final long serialVersionUID = 1L;

  final String kind;

  ModelFailure(String kind, String detail) {
    super(kind + ": " + detail);
    this.kind = kind;
  }

  ModelFailure(String kind, String detail, Throwable cause) {
    super(kind + ": " + detail, cause);
    this.kind = kind;
  }
}
