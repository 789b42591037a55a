package dev.caravan.csi.backend.qnap;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.EnumSet;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

/**
 * The appliance administrator's user and password: from {@code qnap.credentials-file} (a properties
 * file with {@code user} and {@code password}, readable by its owner only: a file its group or others may read or write is refused,
 * as ssh refuses such a private key), else from the environment
 * ({@code CARAVAN_QNAP_USER}, {@code CARAVAN_QNAP_PASSWORD}, e.g. a Nomad template). Never from a
 * flag, which {@code ps} would show. {@link #toString()} never shows the password.
 */
record Credentials(String user, String password) {
  static final String ENV_USER = "CARAVAN_QNAP_USER";
  static final String ENV_PASSWORD = "CARAVAN_QNAP_PASSWORD";

  static Credentials load(Optional<Path> file, Map<String, String> env) {
    if (file.isPresent()) {
      requireOwnerOnly(file.get());
      Properties p = new Properties();
      try (Reader r = Files.newBufferedReader(file.get(), StandardCharsets.UTF_8)) {
        p.load(r);
      } catch (IOException e) {
        throw new IllegalArgumentException("cannot read qnap.credentials-file " + file.get() + ": " + e.getMessage(), e);
      }
      String user = p.getProperty("user", "").strip();
      String password = p.getProperty("password", "");
      if (user.isEmpty() || password.isEmpty()) {
        throw new IllegalArgumentException("qnap.credentials-file " + file.get() + " must set user and password");
      }
      return new Credentials(user, password);
    }
    String user = env.getOrDefault(ENV_USER, "").strip();
    String password = env.getOrDefault(ENV_PASSWORD, "");
    if (user.isEmpty() || password.isEmpty()) {
      throw new IllegalArgumentException("the qnap backend needs the appliance's administrator credentials:"
          + " qnap.credentials-file, or " + ENV_USER + " and " + ENV_PASSWORD + " in the environment");
    }
    return new Credentials(user, password);
  }

  private static final EnumSet<PosixFilePermission> SHARED = EnumSet.of(PosixFilePermission.GROUP_READ,
      PosixFilePermission.GROUP_WRITE, PosixFilePermission.OTHERS_READ, PosixFilePermission.OTHERS_WRITE);

  /** Refuses a credentials file that anyone but its owner may read or change. */
  static void requireOwnerOnly(Path file) {
    java.util.Set<PosixFilePermission> mode;
    try {
      mode = Files.getPosixFilePermissions(file);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read qnap.credentials-file " + file + ": " + e.getMessage(), e);
    }
    if (mode.stream().anyMatch(SHARED::contains)) {
      throw new IllegalArgumentException("qnap.credentials-file " + file + " has mode " + octal(mode) + " ("
          + PosixFilePermissions.toString(mode) + "): its group or other users may read it, and it holds the"
          + " appliance's administrator password. Make it readable by its owner only: chmod 600 " + file);
    }
  }

  private static String octal(java.util.Set<PosixFilePermission> mode) {
    String rwx = PosixFilePermissions.toString(mode); // "rw-r--r--": one bit per character, 0400 first
    int bits = 0;
    for (int i = 0; i < rwx.length(); i++) {
      bits = bits << 1 | (rwx.charAt(i) == '-' ? 0 : 1);
    }
    return String.format(java.util.Locale.ROOT, "%04o", bits);
  }

  @Override
  public String toString() {
    return "Credentials[user=" + user + ", password hidden]";
  }
}
