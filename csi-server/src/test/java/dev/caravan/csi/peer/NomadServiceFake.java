package dev.caravan.csi.peer;

import dev.caravan.csi.observe.Json;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.URLDecoder;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A fake of Nomad's task API socket for Read Service ({@code GET /v1/service/:service_name?namespace=},
 * Nomad's documented service registration endpoint): a token is always required (403 "Permission
 * denied" otherwise, as the task API does), the answer is the JSON list of the service's registrations
 * in that namespace, each with ID, ServiceName, Namespace, NodeID, Datacenter, JobID, AllocID, Tags,
 * Address, Port, CreateIndex and ModifyIndex, and an empty list for a service nobody registered.
 */
final class NomadServiceFake implements AutoCloseable {
  final Path socket;
  final String token;
  /** "namespace/service/alloc" → registration. */
  final Map<String, Map<String, Object>> registrations = new ConcurrentHashMap<>();
  final List<String> requests = new CopyOnWriteArrayList<>();
  private final ServerSocketChannel server;
  private final Thread loop;

  NomadServiceFake(Path socket, String token) throws IOException {
    this.socket = socket;
    this.token = token;
    Files.deleteIfExists(socket);
    server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    server.bind(UnixDomainSocketAddress.of(socket));
    loop = Thread.ofVirtual().start(this::serve);
  }

  /** Registers {@code service} for the plugin allocation on {@code node}, tagged with its CSI node id. */
  void register(String namespace, String service, String node, PeerAddress at) {
    String alloc = "alloc-" + node;
    registrations.put(namespace + "/" + service + "/" + alloc, Map.ofEntries(
        Map.entry("ID", "_nomad-task-" + alloc + "-plugin-" + service + "-peer"),
        Map.entry("ServiceName", service), Map.entry("Namespace", namespace),
        Map.entry("NodeID", "node-uuid-" + node), Map.entry("Datacenter", "dc1"), Map.entry("JobID", "caravan"),
        Map.entry("AllocID", alloc), Map.entry("Tags", List.of(NomadPeers.NODE_TAG + node)),
        Map.entry("Address", at.host()), Map.entry("Port", at.port()),
        Map.entry("CreateIndex", 10), Map.entry("ModifyIndex", 10)));
  }

  private void serve() {
    while (server.isOpen()) {
      try (SocketChannel ch = server.accept()) {
        handle(ch);
      } catch (IOException e) {
        return;
      }
    }
  }

  private void handle(SocketChannel ch) throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(Channels.newInputStream(ch), StandardCharsets.US_ASCII));
    String requestLine = in.readLine();
    String auth = null;
    for (String h = in.readLine(); h != null && !h.isEmpty(); h = in.readLine()) {
      if (h.toLowerCase(Locale.ROOT).startsWith("authorization:")) {
        auth = h.substring(h.indexOf(':') + 1).strip();
      }
    }
    requests.add(String.valueOf(requestLine));
    OutputStream out = Channels.newOutputStream(ch);
    String[] parts = requestLine == null ? new String[0] : requestLine.split(" ", -1);
    if (!("Bearer " + token).equals(auth)) {
      respond(out, 403, "text/plain", "Permission denied");
      return;
    }
    if (parts.length != 3 || !parts[0].equals("GET") || !parts[1].startsWith("/v1/service/")) {
      respond(out, 404, "text/plain", "Invalid URL");
      return;
    }
    String rest = parts[1].substring("/v1/service/".length());
    int q = rest.indexOf('?');
    String name = URLDecoder.decode(q < 0 ? rest : rest.substring(0, q), StandardCharsets.UTF_8);
    String ns = "default";
    if (q >= 0) {
      for (String kv : rest.substring(q + 1).split("&", -1)) {
        if (kv.startsWith("namespace=")) {
          ns = URLDecoder.decode(kv.substring("namespace=".length()), StandardCharsets.UTF_8);
        }
      }
    }
    String prefix = ns + "/" + name + "/";
    List<Map<String, Object>> found = registrations.entrySet().stream().filter(e -> e.getKey().startsWith(prefix))
        .sorted(Map.Entry.comparingByKey()).map(Map.Entry::getValue).toList();
    respond(out, 200, "application/json", Json.write(found));
  }

  private static void respond(OutputStream out, int status, String type, String body) throws IOException {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    out.write(("HTTP/1.1 " + status + " X\r\nContent-Type: " + type + "\r\nX-Nomad-Index: 42\r\n"
        + "X-Nomad-Knownleader: true\r\nX-Nomad-Lastcontact: 0\r\nContent-Length: " + b.length + "\r\n\r\n")
        .getBytes(StandardCharsets.US_ASCII));
    out.write(b);
    out.flush();
  }

  @Override
  public void close() throws IOException {
    server.close();
    loop.interrupt();
    Files.deleteIfExists(socket);
  }
}
