package dev.caravan.csi.peer;

import io.grpc.BindableService;
import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
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
        .addService(ServerInterceptors.intercept(service, new Answered()))
        .build();
    try {
      s.start();
    } catch (IOException e) {
      throw new IOException("cannot listen for peers on " + listen + ": " + e.getMessage(), e);
    }
    return new PeerServer(s);
  }

  /**
   * The trailer on every status this endpoint sends: it tells the caller that the peer itself gave the
   * answer (an owner's UNAVAILABLE, say), so that it is not taken for the peer being unreachable.
   */
  static final Metadata.Key<String> ANSWERED = Metadata.Key.of("caravan-peer-answer", Metadata.ASCII_STRING_MARSHALLER);

  private static final class Answered implements ServerInterceptor {
    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
        ServerCallHandler<Q, R> next) {
      return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
        @Override
        public void close(Status status, Metadata trailers) {
          trailers.put(ANSWERED, "1");
          super.close(status, trailers);
        }
      }, headers);
    }
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
