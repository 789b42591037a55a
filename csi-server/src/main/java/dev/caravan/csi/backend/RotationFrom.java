package dev.caravan.csi.backend;

import java.util.Map;
import java.util.Optional;

/**
 * The passphrase a stage's secrets rotate from ({@link Encryption#PREVIOUS_SECRET}), if any, held for
 * the stage and zeroed when it is done with it.
 */
public record RotationFrom(Optional<Passphrase> passphrase) implements AutoCloseable {
  /** From a stage's secrets, checked as {@link Encryption#previousPassphrase} checks it. */
  public static RotationFrom of(Map<String, String> secrets) {
    return new RotationFrom(Encryption.previousPassphrase(secrets));
  }

  @Override
  public void close() {
    passphrase.ifPresent(Passphrase::close);
  }
}
