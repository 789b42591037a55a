package dev.caravan.csi.backend.qnap;

import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;

/**
 * The appliance administrator's user and password: from {@code qnap.credentials-file} (a properties
 * file with {@code user} and {@code password}, readable by root only), else from the environment
 * ({@code CARAVAN_QNAP_USER}, {@code CARAVAN_QNAP_PASSWORD}, e.g. a Nomad template). Never from a
 * flag, which {@code ps} would show. {@link #toString()} never shows the password.
 */
record Credentials(String user, String password) {
  static final String ENV_USER = "CARAVAN_QNAP_USER";
  static final String ENV_PASSWORD = "CARAVAN_QNAP_PASSWORD";

  static Credentials load(Optional<Path> file, Map<String, String> env) {
    if (file.isPresent()) {
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

  @Override
  public String toString() {
    return "Credentials[user=" + user + ", password hidden]";
  }
}
