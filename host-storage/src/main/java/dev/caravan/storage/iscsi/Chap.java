package dev.caravan.storage.iscsi;

import java.util.Objects;
import java.util.Optional;

/**
 * CHAP credentials for a login: the initiator proves itself to the target with {@code username}
 * and {@code secret}; with {@link #mutual}, the target proves itself back with {@code
 * targetUsername} and {@code targetSecret}. The secrets never appear in {@link #toString()}, in
 * an exception message or on a command line (see {@link Iscsi#login}).
 */
public final class Chap {
  private static final int MAX_LENGTH = 255; // open-iscsi's AUTH_STR_MAX_LEN is 256 with the NUL

  private final String username;
  private final String secret;
  private final Optional<String> targetUsername;
  private final Optional<String> targetSecret;

  private Chap(
      String username, String secret, Optional<String> targetUsername, Optional<String> targetSecret) {
    this.username = check("CHAP username", username);
    this.secret = check("CHAP secret", secret);
    this.targetUsername = targetUsername.map(u -> check("mutual CHAP username", u));
    this.targetSecret = targetSecret.map(s -> check("mutual CHAP secret", s));
  }

  /** One-way CHAP: the target checks the initiator. */
  public static Chap oneWay(String username, String secret) {
    return new Chap(username, secret, Optional.empty(), Optional.empty());
  }

  /** Mutual CHAP: the target checks the initiator, and the initiator checks the target. */
  public static Chap mutual(
      String username, String secret, String targetUsername, String targetSecret) {
    return new Chap(
        username,
        secret,
        Optional.of(Objects.requireNonNull(targetUsername, "targetUsername")),
        Optional.of(Objects.requireNonNull(targetSecret, "targetSecret")));
  }

  public String username() {
    return username;
  }

  /** The name the target answers with in mutual CHAP; empty for one-way CHAP. */
  public Optional<String> targetUsername() {
    return targetUsername;
  }

  public boolean isMutual() {
    return targetUsername.isPresent();
  }

  // Package-private: only the node record writer needs the secrets.
  String secret() {
    return secret;
  }

  Optional<String> targetSecret() {
    return targetSecret;
  }

  /**
   * Values go into iscsiadm's node record, one {@code name = value} line each, which its parser
   * trims: line breaks or surrounding blanks would change or cut the value.
   */
  private static String check(String what, String value) {
    Objects.requireNonNull(value, what);
    if (value.isEmpty() || value.length() > MAX_LENGTH) {
      throw new IllegalArgumentException(what + " must be 1 to " + MAX_LENGTH + " characters");
    }
    if (!value.strip().equals(value)) {
      throw new IllegalArgumentException(what + " must not start or end with blanks");
    }
    for (int i = 0; i < value.length(); i++) {
      if (Character.isISOControl(value.charAt(i))) {
        throw new IllegalArgumentException(what + " must not contain control characters");
      }
    }
    return value;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof Chap c
        && username.equals(c.username)
        && secret.equals(c.secret)
        && targetUsername.equals(c.targetUsername)
        && targetSecret.equals(c.targetSecret);
  }

  @Override
  public int hashCode() {
    return Objects.hash(username, targetUsername);
  }

  /** Names the users, never the secrets. */
  @Override
  public String toString() {
    return isMutual()
        ? "mutual CHAP as " + username + ", target " + targetUsername.orElseThrow()
        : "CHAP as " + username;
  }
}
