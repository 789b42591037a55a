package dev.caravan.csi.cli;

/** A command line or config value that breaks a flag's rule; the message names the flag and the rule. */
final class FlagException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  FlagException(String message) {
    super(message);
  }
}
