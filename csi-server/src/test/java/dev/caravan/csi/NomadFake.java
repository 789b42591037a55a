package dev.caravan.csi;

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
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A small faithful fake of the Nomad task API socket for the endpoints Caravan reads, built from
 * Nomad's documented API: Read CSI Volume ({@code GET /v1/volume/csi/:volume_id?namespace=}; 404
 * "volume not found" for unknown volumes) and Read Service ({@code GET /v1/service/:service_name?namespace=};
 * the JSON list of the service's registrations in that namespace, each with ID, ServiceName,
 * Namespace, NodeID, Datacenter, JobID, AllocID, Tags, Address, Port, CreateIndex and ModifyIndex, and
 * an empty list for a service nobody registered). Like Nomad it always requires a token (403
 * "Permission denied" otherwise), and it sends 200 answers with {@code Transfer-Encoding: chunked}
 * (as Go's net/http does for bodies it streams) or with a Content-Length.
 */
public final class NomadFake implements AutoCloseable {
  public final Path socket;
  final String token;
  final Map<String, Map<String, Object>> volumes = new ConcurrentHashMap<>(); // "ns/id" -> CSIVolume
  /** "namespace/service/alloc" → registration. */
  private final Map<String, Map<String, Object>> registrations = new ConcurrentHashMap<>();
  public final List<String> requests = new CopyOnWriteArrayList<>();
  volatile boolean chunked = true;
  private final ServerSocketChannel server;
  private final Thread loop;

  public NomadFake(Path socket, String token) throws IOException {
    this.socket = socket;
    this.token = token;
    Files.deleteIfExists(socket);
    server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
    server.bind(UnixDomainSocketAddress.of(socket));
    loop = Thread.ofVirtual().start(this::serve);
  }

  void addVolume(String namespace, String id, String externalId) {
    volumes.put(namespace + "/" + id, Map.of("ID", id, "Namespace", namespace, "ExternalID", externalId,
        "PluginID", "caravan", "Name", id, "AccessMode", "single-node-writer", "AttachmentMode", "file-system",
        "Schedulable", true, "Topologies", List.of(Map.of("Segments", Map.of("caravan.dev/node", "test-node")))));
  }

  /** Registers {@code service} for allocation {@code allocId} on Nomad node {@code nodeId}, at {@code address:port}. */
  public void registerService(String namespace, String service, String allocId, String nodeId, List<String> tags,
      String address, int port) {
    registrations.put(namespace + "/" + service + "/" + allocId, Map.ofEntries(
        Map.entry("ID", "_nomad-task-" + allocId + "-plugin-" + service + "-peer"),
        Map.entry("ServiceName", service), Map.entry("Namespace", namespace), Map.entry("NodeID", nodeId),
        Map.entry("Datacenter", "dc1"), Map.entry("JobID", "caravan"), Map.entry("AllocID", allocId),
        Map.entry("Tags", List.copyOf(tags)), Map.entry("Address", address), Map.entry("Port", port),
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
      if (h.toLowerCase(java.util.Locale.ROOT).startsWith("authorization:")) {
        auth = h.substring(h.indexOf(':') + 1).strip();
      }
    }
    requests.add(requestLine);
    OutputStream out = Channels.newOutputStream(ch);
    String[] parts = requestLine == null ? new String[0] : requestLine.split(" ", -1);
    if (!("Bearer " + token).equals(auth)) {
      respond(out, 403, "text/plain", "Permission denied");
      return;
    }
    String prefix = parts.length != 3 || !parts[0].equals("GET") ? ""
        : parts[1].startsWith("/v1/volume/csi/") ? "/v1/volume/csi/"
        : parts[1].startsWith("/v1/service/") ? "/v1/service/" : "";
    if (prefix.isEmpty()) {
      respond(out, 404, "text/plain", "Invalid URL");
      return;
    }
    String rest = parts[1].substring(prefix.length());
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
    if (prefix.equals("/v1/service/")) {
      String key = ns + "/" + name + "/";
      List<Map<String, Object>> found = registrations.entrySet().stream().filter(e -> e.getKey().startsWith(key))
          .sorted(Map.Entry.comparingByKey()).map(Map.Entry::getValue).toList();
      respond(out, 200, "application/json", Json.write(found));
      return;
    }
    Map<String, Object> v = volumes.get(ns + "/" + name);
    if (v == null) {
      respond(out, 404, "text/plain", "volume not found");
      return;
    }
    respond(out, 200, "application/json", Json.write(v));
  }

  private void respond(OutputStream out, int status, String type, String body) throws IOException {
    byte[] b = body.getBytes(StandardCharsets.UTF_8);
    StringBuilder head = new StringBuilder("HTTP/1.1 " + status + " X\r\nContent-Type: " + type + "\r\n"
        + "X-Nomad-Index: 42\r\nX-Nomad-Knownleader: true\r\nX-Nomad-Lastcontact: 0\r\n");
    if (chunked && status == 200) {
      head.append("Transfer-Encoding: chunked\r\n\r\n");
      out.write(head.toString().getBytes(StandardCharsets.US_ASCII));
      int half = b.length / 2;
      for (int[] span : new int[][] {{0, half}, {half, b.length}}) {
        out.write((Integer.toHexString(span[1] - span[0]) + ";ext=1\r\n").getBytes(StandardCharsets.US_ASCII));
        out.write(b, span[0], span[1] - span[0]);
        out.write("\r\n".getBytes(StandardCharsets.US_ASCII));
      }
      out.write("0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
    } else {
      head.append("Content-Length: ").append(b.length).append("\r\n\r\n");
      out.write(head.toString().getBytes(StandardCharsets.US_ASCII));
      out.write(b);
    }
    out.flush();
  }

  @Override
  public void close() throws IOException {
    server.close();
    loop.interrupt();
    Files.deleteIfExists(socket);
  }
}
