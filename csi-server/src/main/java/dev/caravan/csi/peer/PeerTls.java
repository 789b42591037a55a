package dev.caravan.csi.peer;

import io.grpc.netty.shaded.io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.shaded.io.netty.handler.ssl.ClientAuth;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContext;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslContextBuilder;
import io.grpc.netty.shaded.io.netty.handler.ssl.SslProvider;
import java.util.Locale;
import javax.net.ssl.SSLException;

/**
 * TLS contexts of the peer endpoint: TLS 1.3 only, both sides present a certificate, and each checks
 * the other's node name ({@link PeerTrustManager}). The JDK provider is used so that the key and
 * trust managers are asked at every handshake, which is what makes a renewed file take effect.
 */
final class PeerTls {
  private static final String[] PROTOCOLS = {"TLSv1.3"};

  private PeerTls() {}

  /** A server context serving clients that {@code clients} accepts. */
  static SslContext server(CredentialFiles files, PeerTrustManager clients) throws SSLException {
    SslContextBuilder b = SslContextBuilder.forServer(new PeerKeyManager(files))
        .trustManager(clients)
        .clientAuth(ClientAuth.REQUIRE)
        .protocols(PROTOCOLS);
    return GrpcSslContexts.configure(b, SslProvider.JDK).build();
  }

  /** A client context that talks only to a server whose certificate names {@code node}. */
  /** Accepts clients whose certificate names a node of {@code peers} (as it is at each handshake). */
  static PeerTrustManager clients(CredentialFiles files, PeerSet peers) {
    return new PeerTrustManager(files, n -> peers.current().keySet().stream().anyMatch(p -> p.toLowerCase(Locale.ROOT)
        .equals(n)), "a node of the peer set", RefusalReason.NOT_A_PEER);
  }

  static SslContext client(CredentialFiles files, String node) throws SSLException {
    String want = node.toLowerCase(Locale.ROOT);
    SslContextBuilder b = SslContextBuilder.forClient()
        .keyManager(new PeerKeyManager(files))
        .trustManager(new PeerTrustManager(files, want::equals, "node " + node, RefusalReason.WRONG_NODE))
        .protocols(PROTOCOLS);
    return GrpcSslContexts.configure(b, SslProvider.JDK).build();
  }
}
