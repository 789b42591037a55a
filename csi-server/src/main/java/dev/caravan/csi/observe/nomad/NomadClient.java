package dev.caravan.csi.observe.nomad;

import dev.caravan.csi.support.Json;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.URLEncoder;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

/**
 * A minimal client of Nomad's HTTP API through the task API socket ({@code $NOMAD_SECRETS_DIR/api.sock},
 * which always requires a token: the task's workload identity from {@code $NOMAD_SECRETS_DIR/nomad_token}
 * or {@code $NOMAD_TOKEN}). Plain HTTP/1.1, one request per connection, content-length or chunked
 * answers. Only reads, and only what Caravan needs: Read CSI Volume, Read Service, and for the
 * claim-chain inspector Read Allocation, List Job Evaluations and Read CSI Plugin. The
 * token is sent as {@code Authorization: Bearer} and never logged or put in an error message.
 */
public final class NomadClient {
  private static final int MAX_BODY = 8 << 20;

  private final Path socket;
  private final Supplier<Optional<String>> token;
  private final Duration timeout;
  private final ExecutorService io = Executors.newVirtualThreadPerTaskExecutor();

  public NomadClient(Path socket, Supplier<Optional<String>> token, Duration timeout) {
    this.socket = socket;
    this.token = token;
    this.timeout = timeout;
  }

  /**
   * The task API from the environment a Nomad task sees: the socket and token file under
   * {@code NOMAD_SECRETS_DIR}, or {@code NOMAD_TOKEN}; empty when not running as a Nomad task.
   */
  public static Optional<NomadClient> fromEnvironment(Map<String, String> env) {
    String secrets = env.get("NOMAD_SECRETS_DIR");
    if (secrets == null || secrets.isEmpty()) {
      return Optional.empty();
    }
    Path dir = Path.of(secrets);
    String envToken = env.get("NOMAD_TOKEN");
    return Optional.of(new NomadClient(dir.resolve("api.sock"), tokenFrom(dir.resolve("nomad_token"), envToken),
        Duration.ofSeconds(5)));
  }

  /**
   * Reads the token file on every call (Nomad renews workload identities and rewrites the file),
   * falling back to {@code fallback}.
   */
  public static Supplier<Optional<String>> tokenFrom(Path file, String fallback) {
    return () -> {
      try {
        String t = Files.readString(file, StandardCharsets.UTF_8).strip();
        if (!t.isEmpty()) {
          return Optional.of(t);
        }
      } catch (IOException e) {
        // no file: the env token, if any
      }
      return Optional.ofNullable(fallback).filter(s -> !s.isBlank()).map(String::strip);
    };
  }

  public Path socket() {
    return socket;
  }

  /** A CSI volume as Nomad registers it. */
  public record CsiVolume(String id, String namespace, String externalId, String pluginId) {}

  /** Nomad answered with an error, or could not be reached. */
  public static final class NomadException extends Exception {
    private static final long serialVersionUID = 1L;
    private final int status;

    public NomadException(int status, String message) {
      super(message);
      this.status = status;
    }

    /** The HTTP status, or 0 when Nomad could not be reached. */
    public int status() {
      return status;
    }
  }

  /** Read CSI Volume; empty when Nomad has no such volume in that namespace (404). */
  public Optional<CsiVolume> readCsiVolume(String namespace, String volumeId) throws NomadException {
    String path = "/v1/volume/csi/" + URLEncoder.encode(volumeId, StandardCharsets.UTF_8).replace("+", "%20")
        + "?namespace=" + URLEncoder.encode(namespace, StandardCharsets.UTF_8);
    Response r = get(path);
    if (r.status == 404) {
      return Optional.empty();
    }
    Object parsed = json(r, "/v1/volume/csi/" + volumeId);
    if (!(parsed instanceof Map<?, ?> m) || !(m.get("ExternalID") instanceof String ext) || ext.isEmpty()) {
      throw new NomadException(r.status, "Nomad's answer has no ExternalID");
    }
    return Optional.of(new CsiVolume(String.valueOf(m.get("ID")), String.valueOf(m.get("Namespace")), ext,
        String.valueOf(m.get("PluginID"))));
  }

  /**
   * Read CSI Volume with its claims ({@code GET /v1/volume/csi/:id?namespace=}, ACL
   * {@code namespace:csi-read-volume}); empty for 404.
   */
  public Optional<NomadViews.VolumeClaims> readCsiVolumeClaims(String namespace, String volumeId)
      throws NomadException {
    return readObject("/v1/volume/csi/" + segment(volumeId) + "?namespace=" + query(namespace),
        "/v1/volume/csi/" + volumeId).map(NomadViews::volume);
  }

  /** Read Allocation ({@code GET /v1/allocation/:id?namespace=}, ACL {@code namespace:read-job}); empty for 404. */
  public Optional<NomadViews.Allocation> readAllocation(String namespace, String allocId) throws NomadException {
    return readObject("/v1/allocation/" + segment(allocId) + "?namespace=" + query(namespace),
        "/v1/allocation/" + allocId).map(NomadViews::allocation);
  }

  /**
   * List Job Evaluations ({@code GET /v1/job/:id/evaluations?namespace=}, ACL {@code namespace:read-job}),
   * newest first (by CreateIndex); empty for a job Nomad does not know.
   */
  public List<NomadViews.Evaluation> jobEvaluations(String namespace, String jobId) throws NomadException {
    String shown = "/v1/job/" + jobId + "/evaluations";
    Response r = get("/v1/job/" + segment(jobId) + "/evaluations?namespace=" + query(namespace));
    if (r.status == 404) {
      return List.of();
    }
    if (!(json(r, shown) instanceof List<?> list)) {
      throw new NomadException(r.status, "Nomad's answer to GET " + shown + " is not a list");
    }
    List<NomadViews.Evaluation> out = new ArrayList<>();
    for (Object o : list) {
      if (o instanceof Map<?, ?> m) {
        out.add(NomadViews.evaluation(m));
      }
    }
    out.sort(java.util.Comparator.comparingLong(NomadViews.Evaluation::createIndex).reversed()
        .thenComparing(NomadViews.Evaluation::id));
    return out;
  }

  /**
   * Read CSI Plugin ({@code GET /v1/plugin/csi/:id}, ACL: plugin read; plugins have no
   * namespace); empty for 404. Nomad's documentation shows the answer inside a list, the API sends
   * the object: both are read.
   */
  public Optional<NomadViews.CsiPlugin> readCsiPlugin(String pluginId) throws NomadException {
    return readObject("/v1/plugin/csi/" + segment(pluginId), "/v1/plugin/csi/" + pluginId).map(NomadViews::plugin);
  }

  private Optional<Map<?, ?>> readObject(String pathAndQuery, String shown) throws NomadException {
    Response r = get(pathAndQuery);
    if (r.status == 404) {
      return Optional.empty();
    }
    Object parsed = json(r, shown);
    if (parsed instanceof List<?> l && l.size() == 1) {
      parsed = l.getFirst();
    }
    if (!(parsed instanceof Map<?, ?> m)) {
      throw new NomadException(r.status, "Nomad's answer to GET " + shown + " is not an object");
    }
    return Optional.of(m);
  }

  private static String segment(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
  }

  private static String query(String s) {
    return URLEncoder.encode(s, StandardCharsets.UTF_8);
  }

  /** The JSON of a 200 answer to {@code GET shown}; anything else is a {@link NomadException} naming it. */
  private static Object json(Response r, String shown) throws NomadException {
    if (r.status != 200) {
      throw new NomadException(r.status, "Nomad answered " + r.status + " to GET " + shown + ": " + printable(r.body));
    }
    try {
      return Json.parse(r.body);
    } catch (IllegalArgumentException e) {
      throw new NomadException(r.status, "Nomad's answer is not JSON: " + e.getMessage());
    }
  }

  /** One registration of a Nomad service (Nomad's service provider): where one allocation serves it. */
  public record ServiceRegistration(String nodeId, String address, int port, List<String> tags) {
    public ServiceRegistration {
      tags = List.copyOf(tags);
    }
  }

  /**
   * Read Service ({@code GET /v1/service/:service_name?namespace=}, ACL {@code namespace:read-job}):
   * every registration of the service; empty for a service nobody registered.
   */
  public List<ServiceRegistration> readService(String namespace, String serviceName) throws NomadException {
    String path = "/v1/service/" + URLEncoder.encode(serviceName, StandardCharsets.UTF_8).replace("+", "%20")
        + "?namespace=" + URLEncoder.encode(namespace, StandardCharsets.UTF_8);
    Response r = get(path);
    Object parsed = json(r, "/v1/service/" + serviceName);
    if (!(parsed instanceof List<?> list)) {
      throw new NomadException(r.status, "Nomad's answer to GET /v1/service/" + serviceName + " is not a list");
    }
    List<ServiceRegistration> out = new ArrayList<>();
    for (Object o : list) {
      if (o instanceof Map<?, ?> m && m.get("Address") instanceof String address && m.get("Port") instanceof Number port
          && m.get("NodeID") instanceof String node) {
        List<String> tags = new ArrayList<>();
        if (m.get("Tags") instanceof List<?> t) {
          t.forEach(tag -> tags.add(String.valueOf(tag)));
        }
        out.add(new ServiceRegistration(node, address, port.intValue(), tags));
      } else {
        throw new NomadException(r.status, "a registration of service " + serviceName + " lacks NodeID, Address or"
            + " Port");
      }
    }
    return out;
  }

  private record Response(int status, String body) {}

  private Response get(String pathAndQuery) throws NomadException {
    Future<Response> f = io.submit(() -> exchange(pathAndQuery));
    try {
      return f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      f.cancel(true);
      throw new NomadException(0, "Nomad's task API at " + socket + " did not answer within " + timeout.toSeconds() + "s");
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof NomadException n) {
        throw n;
      }
      throw new NomadException(0, "cannot reach Nomad's task API at " + socket + ": " + cause.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new NomadException(0, "interrupted");
    }
  }

  private Response exchange(String pathAndQuery) throws IOException, NomadException {
    Optional<String> t = token.get();
    if (t.isEmpty()) {
      throw new NomadException(0, "no Nomad token (task API needs the workload identity: identity { file = true })");
    }
    if (t.get().chars().anyMatch(c -> c < 0x21 || c > 0x7e)) {
      throw new NomadException(0, "the Nomad token contains characters not allowed in a header");
    }
    try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
      ch.connect(UnixDomainSocketAddress.of(socket));
      OutputStream out = Channels.newOutputStream(ch);
      String request = "GET " + pathAndQuery + " HTTP/1.1\r\n"
          + "Host: localhost\r\n"
          + "Authorization: Bearer " + t.get() + "\r\n"
          + "Accept: application/json\r\n"
          + "User-Agent: caravan\r\n"
          + "Connection: close\r\n\r\n";
      out.write(request.getBytes(StandardCharsets.US_ASCII));
      out.flush();
      return read(Channels.newInputStream(ch));
    }
  }

  static Response read(InputStream raw) throws IOException {
    InputStream in = new java.io.BufferedInputStream(raw);
    String statusLine = line(in);
    String[] parts = statusLine.split(" ", 3);
    if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
      throw new IOException("not an HTTP/1.x answer");
    }
    int status;
    try {
      status = Integer.parseInt(parts[1]);
    } catch (NumberFormatException e) {
      throw new IOException("bad HTTP status line", e);
    }
    Map<String, String> headers = new TreeMap<>();
    for (String h = line(in); !h.isEmpty(); h = line(in)) {
      int colon = h.indexOf(':');
      if (colon > 0) {
        headers.put(h.substring(0, colon).trim().toLowerCase(Locale.ROOT), h.substring(colon + 1).trim());
      }
    }
    byte[] body;
    if ("chunked".equalsIgnoreCase(headers.getOrDefault("transfer-encoding", ""))) {
      ByteArrayOutputStream buf = new ByteArrayOutputStream();
      while (true) {
        String size = line(in);
        int semi = size.indexOf(';');
        int n;
        try {
          n = Integer.parseInt((semi >= 0 ? size.substring(0, semi) : size).trim(), 16);
        } catch (NumberFormatException e) {
          throw new IOException("bad chunk size", e);
        }
        if (n == 0) {
          while (!line(in).isEmpty()) {
            // trailers
          }
          break;
        }
        if (buf.size() + n > MAX_BODY) {
          throw new IOException("answer too large");
        }
        buf.write(exactly(in, n));
        line(in);
      }
      body = buf.toByteArray();
    } else if (headers.containsKey("content-length")) {
      long n = Long.parseLong(headers.get("content-length"));
      if (n > MAX_BODY) {
        throw new IOException("answer too large");
      }
      body = exactly(in, (int) n);
    } else {
      body = in.readNBytes(MAX_BODY);
    }
    return new Response(status, new String(body, StandardCharsets.UTF_8));
  }

  private static byte[] exactly(InputStream in, int n) throws IOException {
    byte[] b = in.readNBytes(n);
    if (b.length != n) {
      throw new EOFException("answer cut short");
    }
    return b;
  }

  private static String line(InputStream in) throws IOException {
    StringBuilder sb = new StringBuilder();
    while (true) {
      int c = in.read();
      if (c < 0) {
        throw new EOFException("connection closed mid-answer");
      }
      if (c == '\n') {
        int len = sb.length();
        return len > 0 && sb.charAt(len - 1) == '\r' ? sb.substring(0, len - 1) : sb.toString();
      }
      if (sb.length() > 16384) {
        throw new IOException("header line too long");
      }
      sb.append((char) c);
    }
  }

  private static String printable(String s) {
    String t = s.length() > 200 ? s.substring(0, 200) + "..." : s;
    return t.replaceAll("[\\p{Cntrl}]", " ").strip();
  }
}
