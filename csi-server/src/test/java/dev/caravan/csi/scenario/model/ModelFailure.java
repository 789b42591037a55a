package dev.caravan.csi.scenario.model;

/**
 * An invariant the model found broken. {@link #kind} names the invariant and where (e.g. "spec code of
 * NodePublishVolume"): a shrunk sequence must break the same one, not merely fail.
 */
final class ModelFailure extends AssertionError {
  private static final long serialVersionUID = 1L;

  final String kind;

  ModelFailure(String kind, String detail) {
    super(kind + ": " + redact(detail));
    this.kind = kind;
  }

  ModelFailure(String kind, String detail, Throwable cause) {
    super(kind + ": " + redact(detail), cause);
    this.kind = kind;
  }

  /**
   * {@code text} with every passphrase of the run replaced: what the model reports (answers, messages,
   * host state) is printed and kept in build logs, and a passphrase must not be, even one the plugin
   * leaked (the failure then says that it leaked, not what).
   */
  static String redact(String text) {
    String r = text;
    for (String p : ModelDriver.passphrases()) {
      r = r.replace(p, "<passphrase>");
    }
    return r;
  }
}
