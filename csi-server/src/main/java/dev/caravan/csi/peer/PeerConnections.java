package dev.caravan.csi.peer;

import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.ChannelFactory;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import io.grpc.netty.shaded.io.netty.channel.ChannelPipeline;
import io.grpc.netty.shaded.io.netty.channel.socket.nio.NioServerSocketChannel;
import io.grpc.netty.shaded.io.netty.handler.ssl.NotSslRecordException;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslHandler;
import io.grpc.netty.shaded.io.netty.util.concurrent.Future;
import java.nio.channels.ClosedChannelException;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLPeerUnverifiedException;

/**
 * The connections the peer endpoint accepted, watched from the first byte: a handshake that fails
 * is a refusal, logged here with the client's address (which the TLS stack does not know), and a
 * change of the credential files closes every connection made under the previous ones. A connection
 * whose client no longer passes the new files is cut {@link #CUT_AFTER} later, without a goodbye; the
 * others are closed gracefully (in flight calls finish, the client reconnects and both sides present
 * what the files hold now).
 */
// The Netty futures this class gets back (addListener's, close's) only signal completion: the
// listeners it adds are what handles it, and a close that fails leaves nothing to undo.
@SuppressWarnings("FutureReturnValueIgnored")
final class PeerConnections {
  private static final System.Logger LOG = System.getLogger(PeerConnections.class.getName());

  /**
   * How long a connection whose client the new files refuse stays open: the call that noticed the
   * change is refused on it just after (PeerServer's per-call check), and a cut made at once would
   * drop that answer, leaving its caller with "network closed" instead of the reason. Meanwhile every
   * call on the connection is refused by that same check, so the delay serves no call.
   */
  static final Duration CUT_AFTER = Duration.ofMillis(500);

  private final PeerTrustManager clients;
  private final RefusalLog refusals;
  private final Set<Channel> open = ConcurrentHashMap.newKeySet();

  PeerConnections(PeerTrustManager clients, RefusalLog refusals) {
    this.clients = clients;
    this.refusals = refusals;
  }

  /** The listening channel for gRPC's server: it hands each accepted connection to this registry first. */
  ChannelFactory<NioServerSocketChannel> listener() {
    return () -> {
      NioServerSocketChannel server = new NioServerSocketChannel();
      server.pipeline().addLast(new ChannelInboundHandlerAdapter() {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
          if (msg instanceof Channel child) {
            accepted(child);
          }
          ctx.fireChannelRead(msg);
        }
      });
      return server;
    };
  }

  private void accepted(Channel child) {
    open.add(child);
    child.closeFuture().addListener(f -> open.remove(child));
    child.pipeline().addFirst(new ChannelInboundHandlerAdapter() {
      private boolean watching;

      @Override
      public void channelActive(ChannelHandlerContext ctx) throws Exception {
        super.channelActive(ctx);
        watch(ctx.pipeline());
      }

      @Override
      public void channelRead(ChannelHandlerContext ctx, Object msg) {
        watch(ctx.pipeline());
        ctx.fireChannelRead(msg);
      }

      /** gRPC adds the SslHandler when the connection becomes active, after this handler. */
      private void watch(ChannelPipeline pipeline) {
        SslHandler ssl = pipeline.get(SslHandler.class);
        if (!watching && ssl != null) {
          watching = true;
          ssl.handshakeFuture().addListener(f -> handshakeDone(child, f));
        }
      }
    });
  }

  private void handshakeDone(Channel child, Future<?> f) {
    if (f.isSuccess()) {
      return;
    }
    Throwable cause = f.cause();
    Optional<PeerRefusal> refusal = PeerRefusal.in(cause);
    if (refusal.isPresent()) {
      PeerRefusal r = refusal.get();
      refusals.refused(r.reason(), child.remoteAddress(), r.subject(), r.names(), r.getMessage());
      return;
    }
    for (Throwable c = cause; c != null; c = c.getCause()) {
      if (c instanceof NotSslRecordException) {
        refusals.refused(RefusalReason.PLAINTEXT, child.remoteAddress(), "", List.of(), "");
        return;
      }
      if (c instanceof ClosedChannelException || String.valueOf(c.getMessage()).contains("Received fatal alert")) {
        return; // the client went away, or refused us: its own log says why
      }
      if (String.valueOf(c.getMessage()).contains("Empty client certificate chain")) {
        refusals.refused(RefusalReason.NO_CERTIFICATE, child.remoteAddress(), "", List.of(), "");
        return;
      }
    }
    refusals.refused(RefusalReason.HANDSHAKE, child.remoteAddress(), "", List.of(), String.valueOf(cause.getMessage()));
  }

  /** Closes the connections made under the previous credential files. */
  void credentialsChanged() {
    int cut = 0;
    int renewed = 0;
    for (Channel ch : List.copyOf(open)) {
      SslHandler ssl = ch.pipeline().get(SslHandler.class);
      if (ssl == null || !ssl.handshakeFuture().isSuccess()) {
        continue; // not through its handshake yet: that handshake uses the new files
      }
      if (passes(ssl)) {
        ch.close(); // gRPC's close of a server connection is graceful: GOAWAY, in flight calls finish
        renewed++;
      } else {
        // From the SslHandler's context down: no graceful goodbye for a peer that is no longer one.
        try {
          ch.eventLoop().schedule(() -> {
            ChannelHandlerContext tls = ch.pipeline().context(SslHandler.class);
            if (tls != null) {
              tls.close();
            }
          }, CUT_AFTER.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
          // The server is stopping: its event loops close every connection, this one with them.
        }
        cut++;
      }
    }
    if (cut + renewed > 0) {
      LOG.log(System.Logger.Level.INFO, "peer credentials changed: closed {0} peer connection(s) made under the"
          + " previous ones ({1} whose client the new files no longer accept, cut in {2} ms)", cut + renewed, cut,
          CUT_AFTER.toMillis());
    }
  }

  private boolean passes(SslHandler ssl) {
    try {
      Certificate[] presented = ssl.engine().getSession().getPeerCertificates();
      clients.check(Arrays.copyOf(presented, presented.length, X509Certificate[].class));
      return true;
    } catch (PeerRefusal | SSLPeerUnverifiedException | ArrayStoreException e) {
      return false;
    }
  }
}
