package dev.caravan.csi.cli;

import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.observe.http.Pem;
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
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code caravan inspect VOLUME_ID}: asks the running plugin's HTTP server for the volume's claim
 * chain and prints it (findings first, with the command to run next). Read-only.
 */
@Command(name = "inspect", description = "Show what the running plugin sees at every layer of one volume, and"
    + " where the layers disagree.")
final class InspectCommand implements Callable<Integer> {
  @Parameters(index = "0", paramLabel = "VOLUME_ID", description = "CSI volume id, or Nomad volume id with --namespace.")
  String volumeId;

  @Option(names = "--namespace", description = "Nomad namespace: VOLUME_ID is then a Nomad volume id.")
  String namespace;

  @Option(names = "--address", description = "The plugin's HTTP server (default: http://127.0.0.1:9633).")
  String address = "http://" + HttpSettings.DEFAULT_HOST + ":" + HttpSettings.DEFAULT_PORT;

  @Option(names = "--token-file", description = "File holding the bearer token (serve --http-token-file).")
  Path tokenFile;

  @Option(names = "--cacert", description = "PEM CA to verify the plugin's HTTPS certificate.")
  Path caCert;

  @Option(names = "--cert", description = "PEM client certificate (mTLS).")
  Path cert;

  @Option(names = "--key", description = "PEM PKCS#8 client key (mTLS).")
  Path key;

  @Option(names = "--json", description = "Print the raw JSON.")
  boolean json;

  @Override
  public Integer call() throws InterruptedException {
    StringBuilder url = new StringBuilder(address.replaceAll("/+$", ""))
        .append("/v1/volumes/").append(encode(volumeId)).append("/chain");
    String sep = "?";
    if (namespace != null) {
      url.append(sep).append("namespace=").append(encode(namespace));
      sep = "&";
    }
    if (!json) {
      url.append(sep).append("format=text");
    }
    try {
      HttpClient.Builder b = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5));
      if (caCert != null || cert != null) {
        b.sslContext(Pem.context(Optional.ofNullable(cert), Optional.ofNullable(key), Optional.ofNullable(caCert)));
      }
      HttpRequest.Builder req = HttpRequest.newBuilder(URI.create(url.toString())).timeout(Duration.ofSeconds(30)).GET();
      if (tokenFile != null) {
        req.header("Authorization", "Bearer " + Files.readString(tokenFile, StandardCharsets.UTF_8).strip());
      }
      try (HttpClient client = b.build()) {
        HttpResponse<String> r = client.send(req.build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() == 200) {
          System.out.print(r.body());
          return 0;
        }
        System.err.println("caravan: the plugin answered " + r.statusCode() + ": " + r.body().strip());
        return r.statusCode() == 404 ? 3 : 1;
      }
    } catch (IOException | GeneralSecurityException | IllegalArgumentException e) {
      System.err.println("caravan: cannot reach the plugin at " + address + ": " + e.getMessage()
          + " (is `caravan serve` running with its HTTP server on?)");
      return 1;
    }
  }

  private static String encode(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }
}
