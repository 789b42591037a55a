package dev.caravan.csi.peer;

import com.google.protobuf.ByteString;
import com.google.protobuf.UnsafeByteOperations;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Replication;
import dev.caravan.csi.peer.v1.DeleteReplicaCall;
import dev.caravan.csi.peer.v1.ReplicaStateAnswer;
import dev.caravan.csi.peer.v1.ReplicaStateCall;
import dev.caravan.csi.peer.v1.ReplicateAnswer;
import dev.caravan.csi.peer.v1.ReplicateChunk;
import dev.caravan.csi.peer.v1.ReplicateHeader;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.io.IOException;
import java.io.OutputStream;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.UnaryOperator;

/**
 * The owner's side of replicating one volume to one node: asks the replica's state, then sends what
 * it lacks over a Replicate stream. The rest of an interrupted receive is sent from its token; then a
 * new replication snapshot, incremental from the newest snapshot both sides share, or in full when
 * they share none (the receiver then replaces what it held: a replica is refreshed, never dropped).
 */
final class Replicator {
  /** How long one stream may take. */
  static final Duration STREAM_DEADLINE = Duration.ofMinutes(30);
  private static final int CHUNK = 256 * 1024;
  private static final String RECOVERY = "The replica is brought up to date at the next interval once it answers.";

  /**
   * What an attempt left.
   *
   * @param known whether the replica's state is known (it answered)
   * @param shared the newest replication snapshot both sides hold after the attempt, if any
   * @param inFlight the snapshot a broken stream was bringing: its resume needs it (and {@code shared})
   * @param bytes bytes sent
   * @param failure why the attempt failed, if it did
   */
  record Attempt(String node, boolean known, OptionalLong shared, OptionalLong inFlight, long bytes,
      Optional<RuntimeException> failure) {}

  private final Replication local;
  private final PeerClients clients;

  Replicator(Replication local, PeerClients clients) {
    this.local = local;
    this.clients = clients;
  }

  Attempt replicate(String volumeId, String node) {
    return replicate(volumeId, node, UnaryOperator.identity());
  }

  /** With {@code tap} around each stream's output (a test cuts a stream with it). */
  Attempt replicate(String volumeId, String node, UnaryOperator<OutputStream> tap) {
    PeerClient client;
    ReplicaStateAnswer state;
    try {
      client = clients.client(node);
      state = client.call(RECOVERY, (stub, key) -> stub.replicaState(
          ReplicaStateCall.newBuilder().setIdempotencyKey(key).setVolumeId(volumeId).build()));
    } catch (RuntimeException e) {
      return new Attempt(node, false, OptionalLong.empty(), OptionalLong.empty(), 0, Optional.of(e));
    }
    long bytes = 0;
    OptionalLong shared = state.getNewestGuid() == 0 ? OptionalLong.empty() : OptionalLong.of(state.getNewestGuid());
    boolean full = false;
    if (!state.getResumeToken().isEmpty()) {
      String token = state.getResumeToken();
      try {
        String snapshot = local.resumedSnapshot(token);
        long[] sent = new long[1];
        ReplicateAnswer a = stream(client, volumeId, snapshot, ReplicateHeader.Kind.RESUME,
            out -> sent[0] = local.resume(volumeId, token, tap.apply(out)));
        bytes += sent[0];
        shared = OptionalLong.of(a.getGuid());
      } catch (CsiException e) {
        if (e.kind() != CsiException.Kind.FAILED_PRECONDITION) {
          return new Attempt(node, true, shared, resumed(volumeId, token), bytes, Optional.of(e));
        }
        full = true; // this side no longer has what the partial receive needs: refresh in full
      } catch (RuntimeException e) {
        return new Attempt(node, true, shared, resumed(volumeId, token), bytes, Optional.of(e));
      }
    }
    List<Replication.Point> mine = local.replicationSnapshots(volumeId);
    OptionalLong known = shared;
    Optional<Replication.Point> base = full || known.isEmpty() ? Optional.empty()
        : mine.stream().filter(p -> p.guid() == known.getAsLong()).findFirst();
    OptionalLong kept = base.isPresent() ? OptionalLong.of(base.get().guid()) : OptionalLong.empty();
    Replication.Point next;
    try {
      next = local.takeReplicationSnapshot(volumeId);
    } catch (RuntimeException e) {
      // No room for the snapshot, say: a failure of this attempt, counted and logged as any other.
      return new Attempt(node, true, kept, OptionalLong.empty(), bytes, Optional.of(e));
    }
    try {
      long[] sent = new long[1];
      stream(client, volumeId, next.name(),
          base.isPresent() ? ReplicateHeader.Kind.INCREMENTAL : ReplicateHeader.Kind.FULL,
          out -> sent[0] = local.send(volumeId, base.map(Replication.Point::name), next.name(), tap.apply(out)));
      bytes += sent[0];
      return new Attempt(node, true, OptionalLong.of(next.guid()), OptionalLong.empty(), bytes, Optional.empty());
    } catch (RuntimeException e) {
      return new Attempt(node, true, kept, OptionalLong.of(next.guid()), bytes, Optional.of(e));
    }
  }

  /** The GUID of the snapshot an interrupted stream was bringing, while this side still has it. */
  private OptionalLong resumed(String volumeId, String token) {
    try {
      String name = local.resumedSnapshot(token);
      return local.replicationSnapshots(volumeId).stream().filter(p -> p.name().equals(name))
          .mapToLong(Replication.Point::guid).findFirst();
    } catch (RuntimeException e) {
      return OptionalLong.empty();
    }
  }

  /** Deletes the volume's replica on {@code node}; UNAVAILABLE naming it when it cannot be reached. */
  boolean deleteReplica(String volumeId, String node) {
    return clients.client(node).call("Its replica is kept; delete it again once the node answers.",
        (stub, key) -> stub.deleteReplica(DeleteReplicaCall.newBuilder().setIdempotencyKey(key)
            .setVolumeId(volumeId).build())).getDeleted();
  }

  private interface Body {
    void writeTo(OutputStream out) throws IOException;
  }

  private ReplicateAnswer stream(PeerClient client, String volumeId, String snapshot, ReplicateHeader.Kind kind,
      Body body) {
    CompletableFuture<ReplicateAnswer> answer = new CompletableFuture<>();
    Object ready = new Object();
    ClientResponseObserver<ReplicateChunk, ReplicateAnswer> responses = new ClientResponseObserver<>() {
      @Override
      public void beforeStart(ClientCallStreamObserver<ReplicateChunk> requests) {
        requests.setOnReadyHandler(() -> {
          synchronized (ready) {
            ready.notifyAll();
          }
        });
      }

      @Override
      public void onNext(ReplicateAnswer value) {
        answer.complete(value);
      }

      @Override
      public void onError(Throwable t) {
        answer.completeExceptionally(t);
        synchronized (ready) {
          ready.notifyAll();
        }
      }

      @Override
      public void onCompleted() {
        answer.completeExceptionally(new IllegalStateException("the receiver answered nothing"));
      }
    };
    ClientCallStreamObserver<ReplicateChunk> requests =
        (ClientCallStreamObserver<ReplicateChunk>) client.streaming(STREAM_DEADLINE).replicate(responses);
    requests.onNext(ReplicateChunk.newBuilder().setHeader(ReplicateHeader.newBuilder()
        .setIdempotencyKey(UUID.randomUUID().toString()).setVolumeId(volumeId).setSnapshot(snapshot).setKind(kind))
        .build());
    try (Chunks out = new Chunks(requests, ready, answer)) {
      body.writeTo(out);
      out.flushChunk();
      requests.onCompleted();
    } catch (IOException | RuntimeException e) {
      requests.onError(Status.CANCELLED.withDescription("the sender stopped: " + e.getMessage()).asRuntimeException());
      if (answer.isCompletedExceptionally()) {
        throw failure(client, answer);
      }
      throw e instanceof RuntimeException r ? r
          : new CsiException(CsiException.Kind.UNAVAILABLE, "the stream to node " + client.node() + " for " + volumeId
              + " broke off: " + e.getMessage() + ". " + RECOVERY);
    }
    try {
      return answer.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new CsiException(CsiException.Kind.ABORTED, "interrupted while waiting for node " + client.node());
    } catch (ExecutionException e) {
      throw failure(client, answer);
    }
  }

  private static RuntimeException failure(PeerClient client, CompletableFuture<ReplicateAnswer> answer) {
    try {
      answer.join();
      return new IllegalStateException("no failure");
    } catch (java.util.concurrent.CompletionException e) {
      return client.unreachable(e.getCause(), RECOVERY);
    }
  }

  /** The stream's bytes as chunks, each sent when gRPC's flow control says the receiver is ready. */
  private static final class Chunks extends OutputStream {
    private final ClientCallStreamObserver<ReplicateChunk> requests;
    private final Object ready;
    private final CompletableFuture<ReplicateAnswer> answer;
    private byte[] buffer = new byte[CHUNK];
    private int filled;

    Chunks(ClientCallStreamObserver<ReplicateChunk> requests, Object ready, CompletableFuture<ReplicateAnswer> answer) {
      this.requests = requests;
      this.ready = ready;
      this.answer = answer;
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      while (len > 0) {
        int n = Math.min(len, buffer.length - filled);
        System.arraycopy(b, off, buffer, filled, n);
        filled += n;
        off += n;
        len -= n;
        if (filled == buffer.length) {
          flushChunk();
        }
      }
    }

    void flushChunk() throws IOException {
      if (filled == 0) {
        return;
      }
      synchronized (ready) {
        while (!requests.isReady() && !answer.isDone()) {
          try {
            ready.wait(1000);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for the receiver", e);
          }
        }
      }
      if (answer.isDone()) {
        throw new IOException("the receiver ended the stream early");
      }
      ByteString data;
      if (filled == buffer.length) {
        // A full chunk goes to gRPC as it is, and a fresh buffer takes its place: copying it for
        // protobuf instead cost a copy of every byte of the stream.
        data = UnsafeByteOperations.unsafeWrap(buffer);
        buffer = new byte[CHUNK];
      } else {
        data = ByteString.copyFrom(buffer, 0, filled);
      }
      requests.onNext(ReplicateChunk.newBuilder().setData(data).build());
      filled = 0;
    }
  }
}
