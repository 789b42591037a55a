package dev.caravan.csi.peer;

import io.grpc.BindableService;
import io.grpc.Server;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * The peer endpoint on its TCP address: mTLS only, and only for clients whose certificate names a
 * node of the current peer set.
 */
final class PeerServer implements AutoCloseable {
  private final Server server;

  private PeerServer(Server server) {
    this.server = server;
  }

  static PeerServer start(PeerAddress listen, CredentialFiles files, PeerSet peers, BindableService service)
      throws IOException {
    Server s = NettyServerBuilder.forAddress(new InetSocketAddress(listen.host(), listen.port()))
        .sslContext(PeerTls.server(files, node -> lowerCase(peers).contains(node)))
        .addService(service)
        .build();
    try {
      s.start();
    } catch (IOException e) {
      throw new IOException("cannot listen for peers on " + listen + ": " + e.getMessage(), e);
    }
    return new PeerServer(s);
  }

  private static Set<String> lowerCase(PeerSet peers) {
    return peers.current().keySet().stream().map(n -> n.toLowerCase(Locale.ROOT)).collect(Collectors.toSet());
  }

  int port() {
    return server.getPort();
  }

  void shutdown(Duration drain) {
    server.shutdown();
    try {
      if (!server.awaitTermination(drain.toMillis(), TimeUnit.MILLISECONDS)) {
        server.shutdownNow();
      }
    } catch (InterruptedException e) {
      server.shutdownNow();
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public void close() {
    shutdown(Duration.ofSeconds(2));
  }
}
