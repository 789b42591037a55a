package dev.caravan.csi.peer;

import dev.caravan.csi.support.Failures;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.peer.v1.PeerGrpc;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.BiFunction;
import javax.net.ssl.SSLException;

/**
 * A connection to one peer node, over mTLS, that only talks to a server whose certificate names that
 * node. Each call gets a fresh idempotency key and a deadline (the caller's own deadline, if shorter,
 * applies too: gRPC carries it over from the CSI call being served).
 */
final class PeerClient implements AutoCloseable {
  private final String node;
  private final PeerAddress address;
  private final ManagedChannel channel;
  private final Duration timeout;
  private final RefusalLog refusals;

  PeerClient(String node, PeerAddress address, CredentialFiles files, Duration timeout, RefusalLog refusals)
      throws SSLException {
    this.node = node;
    this.address = address;
    this.timeout = timeout;
    this.refusals = refusals;
    this.channel = NettyChannelBuilder.forAddress(address.host(), address.port())
        .sslContext(PeerTls.client(files, node))
        .build();
  }

  /** Whether the last connection attempt failed (gRPC then fails calls fast until its backoff ends). */
  boolean failing() {
    return channel.getState(false) == ConnectivityState.TRANSIENT_FAILURE;
  }

  String node() {
    return node;
  }

  PeerAddress address() {
    return address;
  }

  /**
   * Runs one call with a new idempotency key. A peer that cannot be reached (or does not answer in
   * time) is UNAVAILABLE naming the node, its address and {@code recovery}; a refused handshake is
   * UNAVAILABLE saying which side refused which certificate ({@link CallerView}); any status the peer itself sent (marked {@link PeerServer#ANSWERED}), UNAVAILABLE for an
   * owner that it could not reach included, passes through unchanged.
   */
  <R> R call(String recovery, BiFunction<PeerGrpc.PeerBlockingStub, String, R> body) {
    PeerGrpc.PeerBlockingStub stub =
        PeerGrpc.newBlockingStub(channel).withDeadlineAfter(timeout.toMillis(), TimeUnit.MILLISECONDS);
    try {
      return body.apply(stub, UUID.randomUUID().toString());
    } catch (StatusRuntimeException e) {
      Status.Code code = e.getStatus().getCode();
      Metadata trailers = Status.trailersFromThrowable(e);
      boolean answered = trailers != null && trailers.containsKey(PeerServer.ANSWERED);
      if (!answered && (code == Status.Code.UNAVAILABLE || code == Status.Code.DEADLINE_EXCEEDED)) {
        throw new CsiException(CsiException.Kind.UNAVAILABLE, CallerView.refusal(node, address, e, refusals)
            .orElseGet(() -> "node " + node + " (peer endpoint " + address + ") cannot be reached: " + code + why(e))
            + ". " + recovery);
      }
      throw e;
    }
  }

  /**
   * An asynchronous stub on this connection with {@code deadline}, for a streaming call; the caller
   * maps its failures ({@link #unreachable}).
   */
  PeerGrpc.PeerStub streaming(Duration deadline) {
    return PeerGrpc.newStub(channel).withDeadlineAfter(deadline.toMillis(), TimeUnit.MILLISECONDS);
  }

  /**
   * A streaming call's failure as {@link #call} maps a unary one's: UNAVAILABLE naming the node when it
   * could not be reached, the peer's own status unchanged.
   */
  RuntimeException unreachable(Throwable failure, String recovery) {
    if (!(failure instanceof StatusRuntimeException e)) {
      return new CsiException(CsiException.Kind.UNAVAILABLE, "node " + node + " (peer endpoint " + address
          + "): " + failure.getMessage() + ". " + recovery);
    }
    Status.Code code = e.getStatus().getCode();
    Metadata trailers = Status.trailersFromThrowable(e);
    boolean answered = trailers != null && trailers.containsKey(PeerServer.ANSWERED);
    if (!answered && (code == Status.Code.UNAVAILABLE || code == Status.Code.DEADLINE_EXCEEDED)) {
      return new CsiException(CsiException.Kind.UNAVAILABLE, CallerView.refusal(node, address, e, refusals)
          .orElseGet(() -> "node " + node + " (peer endpoint " + address + ") cannot be reached: " + code + why(e))
          + ". " + recovery);
    }
    return e;
  }

  /** The status description and its root cause (refused connection, TLS alert), which tell the operator what to fix. */
  private static String why(StatusRuntimeException e) {
    StringBuilder out = new StringBuilder();
    if (e.getStatus().getDescription() != null) {
      out.append(" (").append(e.getStatus().getDescription()).append(')');
    }
    Throwable root = Failures.rootCause(e);
    if (root != e && root.getMessage() != null) {
      out.append(": ").append(root.getMessage());
    }
    return out.toString();
  }

  /** Lets calls in flight finish and takes no new ones. */
  void retire() {
    channel.shutdown();
  }

  @Override
  public void close() {
    channel.shutdownNow();
  }
}
