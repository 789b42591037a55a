package dev.caravan.csi.peer;

import io.grpc.BindableService;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.ForwardingServerCall;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.nio.NioIoHandler;
import io.grpc.netty.shaded.io.netty.util.concurrent.DefaultThreadFactory;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/**
 * The peer endpoint on its TCP address: mTLS only, and only for clients whose certificate names a
 * node of the current peer set and passes the credential files as they are at each call.
 */
final class PeerServer implements AutoCloseable {
  private final Server server;
  private final EventLoopGroup boss;
  private final EventLoopGroup workers;

  private PeerServer(Server server, EventLoopGroup boss, EventLoopGroup workers) {
    this.server = server;
    this.boss = boss;
    this.workers = workers;
  }

  static PeerServer start(PeerAddress listen, CredentialFiles files, PeerSet peers, BindableService service,
      RefusalLog refusals) throws IOException {
    PeerTrustManager clients = PeerTls.clients(files, peers);
    PeerConnections connections = new PeerConnections(clients, refusals);
    files.onChange(connections::credentialsChanged);
    // Event loops of its own: the listening channel is ours (PeerConnections), so gRPC wants its loops too.
    EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1, new DefaultThreadFactory("caravan-peer-accept", true),
        NioIoHandler.newFactory());
    EventLoopGroup workers = new MultiThreadIoEventLoopGroup(2, new DefaultThreadFactory("caravan-peer-io", true),
        NioIoHandler.newFactory());
    Server s = NettyServerBuilder.forAddress(new InetSocketAddress(listen.host(), listen.port()))
        .channelFactory(connections.listener())
        .bossEventLoopGroup(boss)
        .workerEventLoopGroup(workers)
        .sslContext(PeerTls.server(files, clients))
        .addService(ServerInterceptors.intercept(service, new Answered(), new StillAccepted(files, clients, refusals)))
        .build();
    try {
      s.start();
    } catch (IOException e) {
      stop(boss);
      stop(workers);
      throw new IOException("cannot listen for peers on " + listen + ": " + e.getMessage(), e);
    }
    return new PeerServer(s, boss, workers);
  }

  /**
   * The trailer of a call refused because the connection's client no longer passes the credential
   * files (they changed since its handshake): its value is the reason's label.
   */
  static final Metadata.Key<String> REFUSED = Metadata.Key.of("caravan-peer-refused", Metadata.ASCII_STRING_MARSHALLER);

  /**
   * Checks each call's client certificate against the credential files as they are now, not only at
   * the handshake: a call on a connection opened before a certificate or CA was taken away is refused
   * even if it arrives before that connection is closed.
   */
  private record StillAccepted(CredentialFiles files, PeerTrustManager clients, RefusalLog refusals)
      implements ServerInterceptor {
    @Override
    public <Q, R> ServerCall.Listener<Q> interceptCall(ServerCall<Q, R> call, Metadata headers,
        ServerCallHandler<Q, R> next) {
      files.current(); // notices a change of the files, which closes the connections made under the old ones
      SSLSession session = call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION);
      List<String> callers;
      try {
        if (session == null) {
          throw new PeerRefusal(RefusalReason.NO_CERTIFICATE, Optional.empty(), "no TLS session", null);
        }
        Certificate[] presented = session.getPeerCertificates();
        X509Certificate[] chain = Arrays.copyOf(presented, presented.length, X509Certificate[].class);
        clients.check(chain);
        callers = PeerTrustManager.nodeNames(chain[0]);
      } catch (PeerRefusal r) {
        refusals.refused(r.reason(), call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR), r.subject(), r.names(),
            "on a connection opened before the peer credential files changed");
        Metadata trailers = new Metadata();
        trailers.put(REFUSED, r.reason().label);
        call.close(Status.UNAVAILABLE.withDescription("the certificate this connection was opened with is no longer"
            + " accepted: " + r.reason().rule), trailers);
        return new ServerCall.Listener<>() {};
      } catch (SSLPeerUnverifiedException | ArrayStoreException e) {
        Metadata trailers = new Metadata();
        trailers.put(REFUSED, RefusalReason.NO_CERTIFICATE.label);
        call.close(Status.UNAVAILABLE.withDescription(RefusalReason.NO_CERTIFICATE.rule), trailers);
        return new ServerCall.Listener<>() {};
      }
      return Contexts.interceptCall(Context.current().withValue(CALLER, callers), call, headers, next);
    }
  }

  /** The node names the calling peer's certificate vouches for, in the context of each call. */
  static final Context.Key<List<String>> CALLER = Context.key("caravan-peer-caller");

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
    stop(boss);
    stop(workers);
  }

  /** Stops an event loop group, waiting a few seconds at most for its threads to end. */
  private static void stop(EventLoopGroup group) {
    boolean unused = group.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly(5, TimeUnit.SECONDS);
  }
}
