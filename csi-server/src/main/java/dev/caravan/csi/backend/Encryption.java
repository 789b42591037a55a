package dev.caravan.csi.backend;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The CreateVolume parameter {@code encryption} ({@code off}, the default, or {@code on}) and the
 * one secret an encrypted volume's passphrase travels in, {@code encryptionPassphrase}, shared by
 * every backend.
 *
 * <p>Status codes. The CSI spec's general table is the only one that speaks of secrets: "secrets
 * missing or not valid" is UNAUTHENTICATED, so a missing passphrase, and one that does not open the
 * volume, answer UNAUTHENTICATED; a passphrase outside the length rule is an invalid value,
 * INVALID_ARGUMENT. A backend (or a host) that cannot encrypt refuses {@code encryption=on} with
 * INVALID_ARGUMENT: the spec names that code for "a value the plugin does not support", and
 * CreateVolume's own table has no FAILED_PRECONDITION row (that code asks the caller to change the
 * system's state and retry, which does not make an unencrypting backend encrypt). Every message names
 * the parameter or the secret, never a secret's value.
 */
public final class Encryption {
  /** The CreateVolume parameter. */
  public static final String PARAMETER = "encryption";

  /** The key of the CSI secrets map (Nomad's volume {@code secrets} block) holding the passphrase. */
  public static final String SECRET = "encryptionPassphrase";

  /**
   * The key of the CSI secrets map holding the passphrase being replaced, during a rotation: a stage
   * whose {@link #SECRET} does not open the volume and whose previous one does sets {@link #SECRET}
   * as the volume's passphrase.
   */
  public static final String PREVIOUS_SECRET = "encryptionPassphrasePrevious";

  /** The shortest passphrase ZFS ({@code keyformat=passphrase}) and LUKS2 both accept. */
  public static final int MIN_BYTES = 8;

  /** The longest passphrase ZFS accepts. */
  public static final int MAX_BYTES = 512;

  /** What {@code parameters.encryption} asks for. */
  public enum Mode {
    OFF,
    ON;

    /** The parameter's value for this mode. */
    public String value() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  private Encryption() {}

  /**
   * {@code parameters.encryption}, {@link Mode#OFF} when absent; INVALID_ARGUMENT naming the
   * parameter and the known values for anything else.
   */
  public static Mode mode(Map<String, String> parameters) {
    String value = parameters.get(PARAMETER);
    if (value == null) {
      return Mode.OFF;
    }
    for (Mode m : Mode.values()) {
      if (m.value().equals(value)) {
        return m;
      }
    }
    throw CsiException.invalid("parameters." + PARAMETER + " '" + IdRules.printable(value)
        + "' is not supported; known values: off, on");
  }

  /**
   * The parameters {@code backend} is given for CreateVolume: checks {@code encryption} and, for a
   * backend that does not list it among its parameters, takes {@code encryption=off} away (it asks
   * for what such a backend does anyway). {@code encryption=on} where the backend cannot encrypt is
   * INVALID_ARGUMENT naming why.
   */
  public static Map<String, String> parametersFor(ControllerBackend backend, Map<String, String> parameters) {
    Mode mode = mode(parameters);
    if (mode == Mode.ON) {
      Optional<String> why = backend.encryptionUnavailable();
      if (why.isPresent()) {
        throw CsiException.invalid("parameters." + PARAMETER + "=on cannot be honoured: " + why.get());
      }
    }
    if (parameters.containsKey(PARAMETER) && !backend.knownParameters().contains(PARAMETER)) {
      Map<String, String> rest = new HashMap<>(parameters);
      rest.remove(PARAMETER);
      return rest;
    }
    return parameters;
  }

  /**
   * The passphrase from a request's {@code secrets}: UNAUTHENTICATED naming {@link #SECRET} when it
   * is missing, INVALID_ARGUMENT naming the rule when it is shorter than {@value #MIN_BYTES} or
   * longer than {@value #MAX_BYTES} bytes (UTF-8) or holds a NUL (ZFS's own tools stop at one).
   *
   * @param rpc the request's name, for the message ({@code "CreateVolume"}, {@code
   *     "NodeStageVolume"} ...)
   */
  public static Passphrase passphrase(String rpc, Map<String, String> secrets) {
    String value = secrets.get(SECRET);
    if (value == null || value.isEmpty()) {
      throw new CsiException(CsiException.Kind.UNAUTHENTICATED,
          "secrets." + SECRET + " is required: " + rpc + " of an encrypted volume needs its passphrase"
              + " (add it to the volume's secrets)");
    }
    return checked(SECRET, value);
  }

  /**
   * The passphrase a rotation replaces, {@link #PREVIOUS_SECRET} of the stage's secrets: empty when
   * it is absent or empty, or equal to {@link #SECRET} (nothing to rotate); INVALID_ARGUMENT naming
   * it when it breaks the rule {@link #passphrase} checks.
   */
  public static Optional<Passphrase> previousPassphrase(Map<String, String> secrets) {
    String value = secrets.get(PREVIOUS_SECRET);
    if (value == null || value.isEmpty() || value.equals(secrets.get(SECRET))) {
      return Optional.empty();
    }
    return Optional.of(checked(PREVIOUS_SECRET, value));
  }

  private static Passphrase checked(String key, String value) {
    byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
    if (bytes.length < MIN_BYTES || bytes.length > MAX_BYTES || value.indexOf('\0') >= 0) {
      java.util.Arrays.fill(bytes, (byte) 0);
      throw CsiException.invalid("secrets." + key + " must be " + MIN_BYTES + " to " + MAX_BYTES
          + " bytes (UTF-8) without NUL characters");
    }
    return new Passphrase(bytes);
  }

  /** UNAUTHENTICATED: the passphrase in the secrets does not open the volume. */
  public static CsiException wrongPassphrase(String volumeId) {
    return new CsiException(CsiException.Kind.UNAUTHENTICATED,
        "secrets." + SECRET + " does not open volume " + volumeId + ": wrong passphrase");
  }

  /**
   * UNAUTHENTICATED: a rotation's secrets, neither of which opens the volume (so nothing was
   * changed).
   */
  public static CsiException wrongPassphrases(String volumeId) {
    return new CsiException(CsiException.Kind.UNAUTHENTICATED,
        "neither secrets." + SECRET + " nor secrets." + PREVIOUS_SECRET + " opens volume " + volumeId
            + ": wrong passphrases; nothing was changed");
  }
}
