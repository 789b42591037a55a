package dev.caravan.csi.server;

import java.nio.file.Path;

/** Parses a CSI endpoint. Only unix sockets are supported: {@code unix:///abs/path} or {@code unix:/abs/path}. */
public final class Endpoint {
  /** The variable Nomad (and other orchestrators) set for the plugin. */
  public static final String ENV = "CSI_ENDPOINT";

  private Endpoint() {}

  public static Path parse(String endpoint) {
    if (endpoint == null || endpoint.isBlank()) {
      throw new IllegalArgumentException(
          "no endpoint: pass --endpoint unix:///path/csi.sock or set " + ENV);
    }
    String path;
    if (endpoint.startsWith("unix://")) {
      path = endpoint.substring("unix://".length());
    } else if (endpoint.startsWith("unix:")) {
      path = endpoint.substring("unix:".length());
    } else {
      throw new IllegalArgumentException(
          "endpoint '" + endpoint + "' must be a unix socket URL such as unix:///csi/csi.sock");
    }
    if (!path.startsWith("/")) {
      throw new IllegalArgumentException(
          "endpoint '" + endpoint + "' must name an absolute socket path (unix:///...)");
    }
    Path socket = Path.of(path).normalize();
    if (socket.getFileName() == null) {
      throw new IllegalArgumentException("endpoint '" + endpoint + "' names a directory, not a socket");
    }
    return socket;
  }
}
