package dev.caravan.csi.observe.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;
import dev.caravan.csi.observe.http.ObserveApi.Response;
import dev.caravan.csi.support.Pem;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * The one HTTP port for usage, metrics and the inspector (JDK {@code com.sun.net.httpserver}). Every
 * request is authenticated when a token is configured ({@code Authorization: Bearer}, compared in
 * constant time on SHA-256 digests) and, with mTLS, by the TLS handshake itself (client certificate
 * required). Only GET and HEAD. The token never appears in logs or answers.
 */
public final class ObserveServer implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(ObserveServer.class.getName());

  private final HttpServer server;
  private final ExecutorService executor;

  private ObserveServer(HttpServer server, ExecutorService executor) {
    this.server = server;
    this.executor = executor;
  }

  public static ObserveServer start(HttpSettings settings, ObserveApi api) throws IOException {
    settings.check();
    Optional<byte[]> tokenDigest = settings.readToken().map(ObserveServer::sha256);
    InetSocketAddress address = settings.address();
    HttpServer server;
    if (settings.tls()) {
      SSLContext ctx;
      try {
        ctx = Pem.context(settings.tlsCert(), settings.tlsKey(), settings.tlsClientCa());
      } catch (GeneralSecurityException e) {
        throw new IOException("cannot set up TLS for the HTTP server: " + e.getMessage(), e);
      }
      HttpsServer https = bind(address, () -> HttpsServer.create(address, 64));
      boolean mutual = settings.mutualTls();
      https.setHttpsConfigurator(new HttpsConfigurator(ctx) {
        @Override
        public void configure(HttpsParameters params) {
          SSLParameters p = ctx.getDefaultSSLParameters();
          p.setNeedClientAuth(mutual);
          params.setSSLParameters(p);
        }
      });
      server = https;
    } else {
      server = bind(address, () -> HttpServer.create(address, 64));
    }
    ExecutorService executor = Executors.newFixedThreadPool(4,
        Thread.ofPlatform().name("caravan-http-", 0).daemon(true).factory());
    server.setExecutor(executor);
    server.createContext("/", exchange -> handle(exchange, api, tokenDigest));
    server.start();
    LOG.log(System.Logger.Level.INFO, "observe API on {0}://{1}:{2} (auth: {3})", settings.tls() ? "https" : "http",
        server.getAddress().getHostString(), Integer.toString(server.getAddress().getPort()),
        describeAuth(settings, tokenDigest.isPresent()));
    return new ObserveServer(server, executor);
  }

  private interface Binder<T> {
    T bind() throws IOException;
  }

  /** Binds, turning the JDK's bare "Address already in use" into a message naming the address. */
  private static <T> T bind(InetSocketAddress address, Binder<T> binder) throws IOException {
    try {
      return binder.bind();
    } catch (BindException e) {
      throw new IOException("cannot listen on " + address.getHostString() + ":" + address.getPort()
          + " for the HTTP API (usage, metrics, inspector): " + e.getMessage()
          + "; free that port or choose another with --http-listen (or --http-listen=off)", e);
    }
  }

  private static String describeAuth(HttpSettings s, boolean token) {
    List<String> parts = new ArrayList<>();
    if (token) {
      parts.add("bearer token from " + s.tokenFile().orElseThrow());
    }
    if (s.mutualTls()) {
      parts.add("client certificates from " + s.tlsClientCa().orElseThrow());
    }
    return parts.isEmpty() ? "none, loopback only" : String.join(" + ", parts);
  }

  public InetSocketAddress address() {
    return server.getAddress();
  }

  private static void handle(HttpExchange ex, ObserveApi api, Optional<byte[]> tokenDigest) throws IOException {
    try (ex) {
      Response r;
      String method = ex.getRequestMethod();
      if (tokenDigest.isPresent() && !authorized(ex.getRequestHeaders().getFirst("Authorization"), tokenDigest.get())) {
        r = ObserveApi.Response.error(401, "missing or wrong bearer token")
            .withHeader("WWW-Authenticate", "Bearer realm=\"caravan\"");
      } else if (!method.equals("GET") && !method.equals("HEAD")) {
        r = ObserveApi.Response.error(405, "only GET and HEAD").withHeader("Allow", "GET, HEAD");
      } else {
        Optional<List<String>> segments = segments(ex.getRequestURI().getRawPath());
        r = segments.isEmpty()
            ? ObserveApi.Response.error(400, "malformed path")
            : api.get(segments.get(), query(ex.getRequestURI().getRawQuery()));
      }
      ex.getResponseHeaders().set("Content-Type", r.contentType());
      ex.getResponseHeaders().set("Cache-Control", "no-store");
      ex.getResponseHeaders().set("X-Content-Type-Options", "nosniff");
      r.headers().forEach((k, v) -> ex.getResponseHeaders().set(k, v));
      boolean head = method.equals("HEAD");
      byte[] body = r.body().getBytes(StandardCharsets.UTF_8);
      ex.sendResponseHeaders(r.status(), head || body.length == 0 ? -1 : body.length);
      if (!head) {
        try (OutputStream out = ex.getResponseBody()) {
          out.write(body);
        }
      }
    }
  }

  static boolean authorized(String header, byte[] expectedDigest) {
    String prefix = "Bearer ";
    String presented = header != null && header.regionMatches(true, 0, prefix, 0, prefix.length())
        ? header.substring(prefix.length()).strip()
        : "";
    // Digests of equal length, compared in constant time: neither the token nor its length leaks.
    return MessageDigest.isEqual(sha256(presented.getBytes(StandardCharsets.UTF_8)), expectedDigest)
        && !presented.isEmpty();
  }

  private static byte[] sha256(byte[] b) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(b);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is always available", e);
    }
  }

  /** Decoded path segments; empty when a segment is not valid percent-encoded UTF-8. */
  static Optional<List<String>> segments(String rawPath) {
    List<String> out = new ArrayList<>();
    for (String s : (rawPath == null ? "" : rawPath).split("/", -1)) {
      if (s.isEmpty()) {
        continue;
      }
      Optional<String> d = percentDecode(s);
      if (d.isEmpty()) {
        return Optional.empty();
      }
      out.add(d.get());
    }
    return Optional.of(out);
  }

  static Map<String, String> query(String raw) {
    Map<String, String> m = new LinkedHashMap<>();
    if (raw == null || raw.isEmpty()) {
      return m;
    }
    for (String pair : raw.split("&", -1)) {
      int eq = pair.indexOf('=');
      String k = eq < 0 ? pair : pair.substring(0, eq);
      String v = eq < 0 ? "" : pair.substring(eq + 1);
      Optional<String> dk = percentDecode(k.replace('+', ' '));
      Optional<String> dv = percentDecode(v.replace('+', ' '));
      if (dk.isPresent() && dv.isPresent()) {
        m.putIfAbsent(dk.get(), dv.get());
      }
    }
    return m;
  }

  private static Optional<String> percentDecode(String s) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == '%') {
        if (i + 2 >= s.length()) {
          return Optional.empty();
        }
        int hi = Character.digit(s.charAt(i + 1), 16);
        int lo = Character.digit(s.charAt(i + 2), 16);
        if (hi < 0 || lo < 0) {
          return Optional.empty();
        }
        out.write(hi * 16 + lo);
        i += 2;
      } else if (c < 0x80) {
        out.write(c);
      } else {
        return Optional.empty();
      }
    }
    java.nio.charset.CharsetDecoder dec = StandardCharsets.UTF_8.newDecoder();
    try {
      return Optional.of(dec.decode(java.nio.ByteBuffer.wrap(out.toByteArray())).toString());
    } catch (java.nio.charset.CharacterCodingException e) {
      return Optional.empty();
    }
  }

  @Override
  public void close() {
    server.stop(0);
    executor.shutdownNow();
  }
}
