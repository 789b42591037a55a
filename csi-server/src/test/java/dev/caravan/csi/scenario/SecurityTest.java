package dev.caravan.csi.scenario;

import static dev.caravan.csi.testing.TestCertificates.cert;
import static dev.caravan.csi.testing.TestCertificates.key;
import static dev.caravan.csi.testing.TestCertificates.keyPair;
import static dev.caravan.csi.testing.TestCertificates.pem;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.cli.Main;
import dev.caravan.csi.observe.ObserveSettings;
import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.support.Pem;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.cert.X509Certificate;
import java.util.Optional;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The observe port's security model: loopback by default, a non-loopback bind refused without TLS and
 * a token or mTLS (by the settings, the plugin and {@code caravan serve}), bearer tokens compared in
 * constant time, and mutual TLS with certificates made here by a throwaway CA.
 */
class SecurityTest {
  private static final String TOKEN = "s3cr3t-token-0123456789abcdef";

  @TempDir Path dir;
  private PluginFixture f;

  @AfterEach
  void tearDown() throws IOException {
    if (f != null) {
      f.close();
    }
  }

  private PluginFixture start(HttpSettings http) throws IOException {
    UnaryOperator<Plugin.Settings> c = s -> s.withObserve(ObserveSettings.on(http).withStats(ObserveTest.QUIET));
    f = PluginFixture.start(c);
    return f;
  }

  private int port() {
    return f.plugin().observability().httpAddress().orElseThrow().getPort();
  }

  private static HttpResponse<String> get(HttpClient client, String url, Optional<String> bearer)
      throws IOException, InterruptedException {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url));
    bearer.ifPresent(t -> b.header("Authorization", "Bearer " + t));
    return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
  }

  @Test
  void nonLoopbackWithoutEncryptionAndAuthenticationIsRefused() throws Exception {
    HttpSettings open = HttpSettings.parseListen("0.0.0.0:0");
    assertThatThrownBy(open::check).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("without encryption").hasMessageContaining("--http-tls-cert");
    HttpSettings tokenOnly = open.withToken(Optional.of(dir.resolve("token")));
    assertThatThrownBy(tokenOnly::check).as("a token in plain HTTP crosses the network readable")
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("without encryption");
    HttpSettings tlsOnly = open.withTls(Optional.of(dir.resolve("c")), Optional.of(dir.resolve("k")), Optional.empty());
    assertThatThrownBy(tlsOnly::check).as("TLS without client certificates is not authentication")
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("without authentication");
    tlsOnly.withToken(Optional.of(dir.resolve("token"))).check();
    HttpSettings.parseListen("127.0.0.1:0").check();
    HttpSettings.parseListen("[::1]:0").check();

    // caravan serve refuses before starting anything
    Path socket = dir.resolve("csi.sock");
    int code = Main.execute("serve", "--driver=file", "--endpoint", "unix://" + socket,
        "--data-dir", dir.resolve("data").toString(), "--node-id", "n1", "--http-listen", "0.0.0.0:0");
    assertThat(code).isEqualTo(2);
    assertThat(Files.exists(socket)).isFalse();
    Path tokenFile = Files.writeString(dir.resolve("token"), TOKEN + "\n");
    assertThat(Main.execute("serve", "--driver=file", "--endpoint", "unix://" + socket,
        "--data-dir", dir.resolve("data").toString(), "--node-id", "n1", "--http-listen", "0.0.0.0:0",
        "--http-token-file", tokenFile.toString())).as("a token without TLS off loopback").isEqualTo(2);
    assertThat(Files.exists(socket)).isFalse();
  }

  @Test
  void tokenIsRequiredAndComparedWholly() throws Exception {
    Path tokenFile = Files.writeString(dir.resolve("token"), TOKEN + "\n");
    start(HttpSettings.parseListen("127.0.0.1:0").withToken(Optional.of(tokenFile)));
    try (HttpClient client = HttpClient.newHttpClient()) {
      String url = "http://127.0.0.1:" + port() + "/metrics";
      assertThat(get(client, url, Optional.empty()).statusCode()).isEqualTo(401);
      assertThat(get(client, url, Optional.of("wrong")).statusCode()).isEqualTo(401);
      assertThat(get(client, url, Optional.of(TOKEN.substring(0, TOKEN.length() - 1))).statusCode()).isEqualTo(401);
      assertThat(get(client, url, Optional.of(TOKEN + "x")).statusCode()).isEqualTo(401);
      HttpResponse<String> ok = get(client, url, Optional.of(TOKEN));
      assertThat(ok.statusCode()).isEqualTo(200);
      assertThat(ok.body()).contains("caravan_build_info").doesNotContain(TOKEN);
      HttpResponse<String> denied = get(client, "http://127.0.0.1:" + port() + "/v1/volume-stats", Optional.empty());
      assertThat(denied.statusCode()).isEqualTo(401);
      assertThat(denied.headers().firstValue("WWW-Authenticate")).hasValue("Bearer realm=\"caravan\"");
      assertThat(get(client, "http://127.0.0.1:" + port() + "/v1/volume-stats", Optional.of(TOKEN)).body())
          .doesNotContain(TOKEN);
    }
  }

  @Test
  void shortTokensAreRefused() throws Exception {
    Path tokenFile = Files.writeString(dir.resolve("token"), "short");
    assertThatThrownBy(() -> HttpSettings.loopback(0).withToken(Optional.of(tokenFile)).readToken())
        .isInstanceOf(IllegalArgumentException.class).hasMessageNotContaining("short\"");
  }

  @Test
  void offLoopbackTheTokenTravelsOnlyInsideTls() throws Exception {
    KeyPair caKey = keyPair();
    X509Certificate ca = cert("CN=caravan-test-ca", caKey, "CN=caravan-test-ca", caKey.getPrivate(), true);
    KeyPair serverKey = keyPair();
    X509Certificate server = cert("CN=caravan-test-ca", serverKey, "CN=localhost", caKey.getPrivate(), false);
    Path caPem = pem(dir.resolve("ca.pem"), ca);
    Path tokenFile = Files.writeString(dir.resolve("token"), TOKEN + "\n");
    start(HttpSettings.parseListen("0.0.0.0:0").withToken(Optional.of(tokenFile))
        .withTls(Optional.of(pem(dir.resolve("server.pem"), server)),
            Optional.of(key(dir.resolve("server.key"), serverKey.getPrivate())), Optional.empty()));

    try (HttpClient tls = HttpClient.newBuilder()
        .sslContext(Pem.context(Optional.empty(), Optional.empty(), Optional.of(caPem))).build()) {
      String url = "https://127.0.0.1:" + port() + "/v1/volume-stats";
      assertThat(get(tls, url, Optional.empty()).statusCode()).isEqualTo(401);
      assertThat(get(tls, url, Optional.of(TOKEN)).statusCode()).isEqualTo(200);
    }
    try (HttpClient plain = HttpClient.newHttpClient()) {
      assertThatThrownBy(() -> get(plain, "http://127.0.0.1:" + port() + "/metrics", Optional.of(TOKEN)))
          .as("the port speaks only TLS").isInstanceOf(IOException.class);
    }
  }

  @Test
  void mutualTlsAcceptsOnlyClientsWithACertificateFromTheCa() throws Exception {
    KeyPair caKey = keyPair();
    X509Certificate ca = cert("CN=caravan-test-ca", caKey, "CN=caravan-test-ca", caKey.getPrivate(), true);
    KeyPair serverKey = keyPair();
    X509Certificate server = cert("CN=caravan-test-ca", serverKey, "CN=localhost", caKey.getPrivate(), false);
    KeyPair clientKey = keyPair();
    X509Certificate client = cert("CN=caravan-test-ca", clientKey, "CN=operator", caKey.getPrivate(), false);
    KeyPair otherCaKey = keyPair();
    KeyPair strangerKey = keyPair();
    X509Certificate stranger = cert("CN=other-ca", strangerKey, "CN=stranger", otherCaKey.getPrivate(), false);

    Path caPem = pem(dir.resolve("ca.pem"), ca);
    start(HttpSettings.parseListen("0.0.0.0:0").withTls(Optional.of(pem(dir.resolve("server.pem"), server)),
        Optional.of(key(dir.resolve("server.key"), serverKey.getPrivate())), Optional.of(caPem)));
    String url = "https://127.0.0.1:" + port() + "/v1/volume-stats";

    try (HttpClient good = HttpClient.newBuilder().sslContext(Pem.context(Optional.of(pem(dir.resolve("client.pem"), client)),
        Optional.of(key(dir.resolve("client.key"), clientKey.getPrivate())), Optional.of(caPem))).build()) {
      assertThat(get(good, url, Optional.empty()).statusCode()).isEqualTo(200);
    }
    try (HttpClient anonymous = HttpClient.newBuilder()
        .sslContext(Pem.context(Optional.empty(), Optional.empty(), Optional.of(caPem))).build()) {
      assertThatThrownBy(() -> get(anonymous, url, Optional.empty())).isInstanceOf(IOException.class);
    }
    try (HttpClient strange = HttpClient.newBuilder().sslContext(Pem.context(
        Optional.of(pem(dir.resolve("stranger.pem"), stranger)),
        Optional.of(key(dir.resolve("stranger.key"), strangerKey.getPrivate())), Optional.of(caPem))).build()) {
      assertThatThrownBy(() -> get(strange, url, Optional.empty())).isInstanceOf(IOException.class);
    }
  }
}
