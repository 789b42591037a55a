package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.support.Failures;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.support.Pem;
import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.StringJoiner;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManager;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * HTTP(S) to the appliance: form posts for the CGI API, JSON for the REST API. Requests and answers
 * are never logged (forms carry the password and CHAP secrets); failures name the path only.
 */
final class Http implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Http.class.getName());

  /** One answer: the HTTP status and the body as text. */
  record Response(int status, String body) {}

  private final URI base;
  private final HttpClient client;
  private final Duration timeout;

  Http(URI base, SSLContext tls, Duration timeout) {
    this.base = base;
    this.timeout = timeout;
    this.client = HttpClient.newBuilder().sslContext(tls).connectTimeout(timeout)
        .followRedirects(HttpClient.Redirect.NEVER).build();
  }

  static Http open(QnapConfig config) {
    SSLContext tls;
    try {
      if (config.insecure()) {
        LOG.log(System.Logger.Level.WARNING, "qnap: TLS certificate checks of {0} are OFF"
            + " (qnap.insecure-skip-tls-verify=true): anyone on the path can read the administrator password;"
            + " give the appliance a certificate and set qnap.ca-file instead", config.url().orElseThrow());
        tls = SSLContext.getInstance("TLS");
        tls.init(null, new TrustManager[] {new TrustAnything()}, null);
      } else if (config.caFile().isPresent()) {
        tls = Pem.context(Optional.empty(), Optional.empty(), config.caFile());
      } else {
        tls = SSLContext.getDefault();
      }
    } catch (IOException | GeneralSecurityException e) {
      throw new IllegalArgumentException("qnap.ca-file " + config.caFile().orElse(null) + " cannot be used: "
          + e.getMessage(), e);
    }
    return new Http(config.url().orElseThrow(), tls, config.requestTimeout());
  }

  URI base() {
    return base;
  }

  /** POSTs {@code form} (URL-encoded) to {@code path}, with {@code query} in the URL. */
  Response postForm(String path, Map<String, String> query, Map<String, String> form) {
    String q = encode(query);
    HttpRequest req = HttpRequest.newBuilder(base.resolve(path + (q.isEmpty() ? "" : "?" + q)))
        .timeout(timeout)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .POST(HttpRequest.BodyPublishers.ofString(encode(form)))
        .build();
    return send(req, path);
  }

  /** A JSON request with the session id in the {@code sid} header (hero's REST API). */
  Response json(String method, String path, Optional<String> body, String sid) {
    HttpRequest.Builder b = HttpRequest.newBuilder(base.resolve(path)).timeout(timeout).header("sid", sid)
        .header("Accept", "application/json");
    if (body.isPresent()) {
      b.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(body.get()));
    } else {
      b.method(method, HttpRequest.BodyPublishers.noBody());
    }
    return send(b.build(), method + " " + path);
  }

  private Response send(HttpRequest req, String what) {
    try {
      HttpResponse<String> r = client.send(req, HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
      if (r.statusCode() >= 500) {
        throw new CsiException(CsiException.Kind.UNAVAILABLE,
            "QNAP appliance " + base + " answered " + what + " with HTTP " + r.statusCode());
      }
      return new Response(r.statusCode(), r.body());
    } catch (IOException e) {
      throw new CsiException(CsiException.Kind.UNAVAILABLE,
          "QNAP appliance " + base + " did not answer " + what + ": " + connectionFailure(e), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CsiException(CsiException.Kind.ABORTED, "interrupted while calling the QNAP appliance (" + what + ")");
    }
  }

  /**
   * Why a request got no answer, in words: the JDK's message, or, for the kinds that often come
   * without one (a refused connection, a closed one), what that kind means.
   */
  static String connectionFailure(IOException e) {
    if (e instanceof javax.net.ssl.SSLException) {
      // The JDK's message names its certificate path classes; the innermost cause says what failed.
      return "the TLS handshake failed (" + Failures.describe(Failures.rootCause(e))
          + "); the appliance's certificate must chain to the configured CA";
    }
    String message = e.getMessage();
    if (message != null && !message.isBlank()) {
      return message;
    }
    if (e instanceof java.net.ConnectException) {
      return "the connection was refused or could not be made";
    }
    if (e instanceof java.io.EOFException) {
      return "the connection closed before the answer came";
    }
    return Failures.describe(e);
  }

  static String encode(Map<String, String> params) {
    StringJoiner j = new StringJoiner("&");
    params.forEach((k, v) -> j.add(URLEncoder.encode(k, StandardCharsets.UTF_8) + "="
        + URLEncoder.encode(v, StandardCharsets.UTF_8)));
    return j.toString();
  }

  @Override
  public void close() {
    client.close();
  }

  /**
   * Accepts any certificate and any host name: only with {@code qnap.insecure-skip-tls-verify=true}.
   * Being an X509ExtendedTrustManager, it also replaces the JDK's host name check.
   */
  private static final class TrustAnything extends X509ExtendedTrustManager {
    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType) {}

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType) {}

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) {}

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) {}

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {}

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {}

    @Override
    public X509Certificate[] getAcceptedIssuers() {
      return new X509Certificate[0];
    }
  }
}
