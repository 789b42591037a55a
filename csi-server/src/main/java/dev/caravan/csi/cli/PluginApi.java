package dev.caravan.csi.cli;

import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.support.Pem;
import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.Optional;
import java.util.function.ToIntFunction;
import picocli.CommandLine.Option;

/** The options and the GET of the commands that ask a running plugin's HTTP server (inspect, stats). */
final class PluginApi {
  @Option(names = "--address", description = "The plugin's HTTP server (default: http://127.0.0.1:9633).")
  String address = "http://" + HttpSettings.DEFAULT_HOST + ":" + HttpSettings.DEFAULT_PORT;

  @Option(names = "--token-file", description = "File holding the bearer token (serve --http-token-file).")
  Path tokenFile;

  @Option(names = "--cacert", description = "PEM CA to verify the plugin's HTTPS certificate.")
  Path caCert;

  @Option(names = "--cert", description = "PEM client certificate (mTLS).")
  Path cert;

  @Option(names = "--key", description = "PEM client key (mTLS; PKCS#8 or OpenSSL's RSA/EC form, unencrypted).")
  Path key;

  /** The plugin's answer: status and body. */
  private record Answer(int status, String body) {}

  /**
   * GETs {@code pathAndQuery} (already encoded) from the plugin.
   *
   * @throws IOException naming the address, when the plugin cannot be reached
   */
  private Answer fetch(String pathAndQuery) throws IOException, InterruptedException {
    String url = address.replaceAll("/+$", "") + pathAndQuery;
    try {
      HttpClient.Builder b = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5));
      if (caCert != null || cert != null) {
        b.sslContext(Pem.context(Optional.ofNullable(cert), Optional.ofNullable(key), Optional.ofNullable(caCert)));
      }
      HttpRequest.Builder req = HttpRequest.newBuilder(URI.create(url)).timeout(Duration.ofSeconds(30)).GET();
      if (tokenFile != null) {
        req.header("Authorization", "Bearer " + Files.readString(tokenFile, StandardCharsets.UTF_8).strip());
      }
      try (HttpClient client = b.build()) {
        HttpResponse<String> r = client.send(req.build(), HttpResponse.BodyHandlers.ofString());
        return new Answer(r.statusCode(), r.body());
      }
    } catch (IOException | GeneralSecurityException | IllegalArgumentException e) {
      throw new IOException("cannot reach the plugin at " + address + ": " + e.getMessage()
          + " (is `caravan serve` running with its HTTP server on?)", e);
    }
  }

  /**
   * GETs {@code pathAndQuery} and hands a 200 answer's body to {@code onOk}; any other outcome is
   * printed on stderr, so that every command that asks the plugin reports failures alike.
   *
   * @return what {@code onOk} returns; 3 when the plugin answers 404 (it does not know what was
   *     asked); 1 for any other answer or when it cannot be reached
   */
  int get(String pathAndQuery, ToIntFunction<String> onOk) throws InterruptedException {
    Answer r;
    try {
      r = fetch(pathAndQuery);
    } catch (IOException e) {
      System.err.println("caravan: " + e.getMessage());
      return 1;
    }
    if (r.status() != 200) {
      System.err.println("caravan: the plugin answered " + r.status() + ": " + r.body().strip());
      return r.status() == 404 ? 3 : 1;
    }
    return onOk.applyAsInt(r.body());
  }

  static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }
}
