package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.CsiException;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;
import org.w3c.dom.Element;

/**
 * One login session on the appliance, shared by both transports (the REST API takes the same session
 * id in a header). Logs in lazily, on the first call; when a call reports the session expired it logs
 * in again once and repeats the call once. A refused login is not retried for {@code loginRetry}:
 * QTS blocks an address after repeated failed logins (Network Access Protection), so every call in
 * that time fails at once with the appliance's answer. Logs out on close, and never logs in after it.
 */
final class ApplianceLogin implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(ApplianceLogin.class.getName());
  static final String LOGIN = "/cgi-bin/authLogin.cgi";
  static final String LOGOUT = "/cgi-bin/authLogout.cgi";

  /** Thrown by a call whose answer says the session is no longer valid. */
  static final class Expired extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Expired(String why) {
      super(why, null, false, false);
    }
  }

  private final Http http;
  private final Credentials credentials;
  private final Duration loginRetry;
  private final Clock clock;
  private String sid;
  private Instant refusedAt;
  private String refusal = "";
  private int logins;
  private boolean closed;

  ApplianceLogin(Http http, Credentials credentials, Duration loginRetry, Clock clock) {
    this.http = http;
    this.credentials = credentials;
    this.loginRetry = loginRetry;
    this.clock = clock;
  }

  Http http() {
    return http;
  }

  /** Runs {@code call} with a session id; on {@link Expired}, logs in again and runs it once more. */
  <T> T call(Function<String, T> call) {
    String first = sid();
    try {
      return call.apply(first);
    } catch (Expired e) {
      LOG.log(System.Logger.Level.INFO, "qnap: session expired ({0}); logging in again", e.getMessage());
      invalidate(first);
    }
    String second = sid();
    try {
      return call.apply(second);
    } catch (Expired e) {
      invalidate(second);
      throw new CsiException(CsiException.Kind.UNAVAILABLE, "the QNAP appliance rejected a fresh session at once ("
          + e.getMessage() + "); not retrying");
    }
  }

  private synchronized void invalidate(String old) {
    if (old.equals(sid)) {
      sid = null;
    }
  }

  /** The current session id, logging in if there is none. */
  synchronized String sid() {
    if (sid != null) {
      return sid;
    }
    if (closed) {
      // Background work (the fence check) may outlive the plugin; a login now would leave a session open.
      throw new CsiException(CsiException.Kind.UNAVAILABLE,
          "logged out of the QNAP appliance because the plugin is stopping; not logging in again");
    }
    if (refusedAt != null && clock.instant().isBefore(refusedAt.plus(loginRetry))) {
      throw new CsiException(CsiException.Kind.UNAVAILABLE, "the QNAP appliance refused the login of '"
          + credentials.user() + "' at " + refusedAt + " (" + refusal + "); not trying again before "
          + refusedAt.plus(loginRetry) + ", because repeated failed logins get this address blocked (QTS Network"
          + " Access Protection). Fix the credentials and restart the plugin");
    }
    Map<String, String> form = new LinkedHashMap<>();
    form.put("user", credentials.user());
    form.put("pwd", Base64.getEncoder().encodeToString(credentials.password().getBytes(StandardCharsets.UTF_8)));
    form.put("serviceKey", "1");
    Http.Response r = http.postForm(LOGIN, Map.of(), form);
    logins++;
    if (r.status() == 401 || r.status() == 403) {
      refused("HTTP " + r.status());
    }
    Element x = Xml.parse(r.body(), "the login");
    String passed = Xml.text(x, "authPassed", "");
    String newSid = Xml.text(x, "authSid", "");
    if (!passed.equals("1") || newSid.isEmpty()) {
      refused("authPassed " + (passed.isEmpty() ? "missing" : passed) + Xml.text(x, "errorValue")
          .map(v -> ", errorValue " + v).orElse(""));
    }
    refusedAt = null;
    sid = newSid;
    return sid;
  }

  private void refused(String words) {
    refusedAt = clock.instant();
    refusal = words;
    throw new CsiException(CsiException.Kind.UNAVAILABLE, "the QNAP appliance refused the login of '"
        + credentials.user() + "' (" + words + "); it will not be retried before " + refusedAt.plus(loginRetry)
        + " (repeated failed logins get this address blocked); the account must be an administrator");
  }

  /** How many login requests were sent (for tests and the log). */
  synchronized int logins() {
    return logins;
  }

  /** Logs out if logged in; failures are only logged (the appliance may already have dropped it). */
  @Override
  public synchronized void close() {
    closed = true;
    if (sid == null) {
      return;
    }
    try {
      http.postForm(LOGOUT, Map.of(), Map.of("logout", "1", "sid", sid));
    } catch (CsiException e) {
      LOG.log(System.Logger.Level.INFO, "qnap: logout failed: {0}", e.getMessage());
    } finally {
      sid = null;
    }
  }
}
