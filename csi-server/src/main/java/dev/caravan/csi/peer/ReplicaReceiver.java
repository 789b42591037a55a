package dev.caravan.csi.peer;

import com.google.protobuf.ByteString;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Replication;
import dev.caravan.csi.peer.v1.ReplicateAnswer;
import dev.caravan.csi.peer.v1.ReplicateChunk;
import dev.caravan.csi.peer.v1.ReplicateHeader;
import dev.caravan.csi.service.Rpc;
import io.grpc.Context;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.InputStream;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.Consumer;

/**
 * The receiving end of one Replicate stream: the chunks, as gRPC delivers them, become an {@link
 * InputStream} that the backend's receive reads on a thread of its own. One chunk is asked for at a
 * time, when the receive has taken the one before, so gRPC's flow control holds the sender to the
 * pace of the receiving pool and nothing queues up here. A stream that breaks off (the sender
 * cancels, the connection drops, the deadline passes) ends the InputStream with an IOException; what
 * the receive leaves then is the backend's to say ({@link Replication#afterABrokenStream()}).
 */
final class ReplicaReceiver implements StreamObserver<ReplicateChunk> {
  private static final System.Logger LOG = System.getLogger(ReplicaReceiver.class.getName());
  private static final Object END = new Object();

  private final Replication replication;
  /** The volumes a stream is being received for on this node: one at a time each. */
  private final Set<String> receiving;
  private final Consumer<String> check;
  private final ServerCallStreamObserver<ReplicateAnswer> out;
  private final BlockingQueue<Object> chunks = new LinkedBlockingQueue<>();
  private boolean started;
  private boolean refused;

  private record Broken(Throwable cause) {}

  /**
   * One stream's receiver: {@code receiving} is the node's set of volumes being received, shared by
   * its receivers; {@code check} refuses a volume id the caller may not replicate here (it throws).
   */
  ReplicaReceiver(Replication replication, Set<String> receiving, Consumer<String> check,
      ServerCallStreamObserver<ReplicateAnswer> out) {
    this.replication = replication;
    this.receiving = receiving;
    this.check = check;
    this.out = out;
    out.disableAutoRequest();
    out.request(1);
  }

  @Override
  public void onNext(ReplicateChunk chunk) {
    if (!started) {
      started = true;
      start(chunk.getHeader());
    }
    if (refused) {
      return;
    }
    if (!chunk.getData().isEmpty()) {
      chunks.add(chunk.getData());
    } else {
      out.request(1);
    }
  }

  @Override
  public void onError(Throwable t) {
    chunks.add(new Broken(t));
  }

  @Override
  public void onCompleted() {
    chunks.add(END);
  }

  private void start(ReplicateHeader h) {
    String volume = h.getVolumeId();
    try {
      if (Context.current().getDeadline() == null) {
        throw CsiException.invalid("a peer call must carry a deadline");
      }
      if (h.getIdempotencyKey().isEmpty() || volume.isEmpty() || h.getSnapshot().isEmpty()
          || h.getKind() == ReplicateHeader.Kind.KIND_UNSPECIFIED) {
        throw CsiException.invalid("the first message of Replicate carries the header: idempotency_key,"
            + " volume_id, snapshot and kind are required");
      }
      check.accept(volume);
      if (!receiving.add(volume)) {
        throw new CsiException(CsiException.Kind.ABORTED, "a stream for the replica of " + volume
            + " is already being received on this node");
      }
    } catch (CsiException e) {
      refused = true;
      out.onError(Rpc.status(e).asRuntimeException());
      return;
    } catch (StatusRuntimeException e) {
      refused = true;
      out.onError(e);
      return;
    }
    Replication.StreamKind kind = switch (h.getKind()) {
      case FULL -> Replication.StreamKind.FULL;
      case INCREMENTAL -> Replication.StreamKind.INCREMENTAL;
      default -> Replication.StreamKind.RESUME;
    };
    Thread.ofVirtual().name("replica-receive " + volume).start(() -> {
      try (InputStream in = new Chunks()) {
        Replication.Point p = replication.receive(volume, h.getSnapshot(), kind, in);
        answer(volume, () -> {
          out.onNext(ReplicateAnswer.newBuilder().setSnapshot(p.name()).setGuid(p.guid()).build());
          out.onCompleted();
        });
      } catch (CsiException e) {
        LOG.log(System.Logger.Level.WARNING, "receive into the replica of {0} failed: {1}", volume, e.getMessage());
        answer(volume, () -> out.onError(Rpc.status(e).asRuntimeException()));
      } catch (IOException e) {
        String left = replication.afterABrokenStream();
        LOG.log(System.Logger.Level.WARNING, "the stream for the replica of {0} broke off; {1}: {2}", volume, left,
            e.getMessage());
        answer(volume, () -> out.onError(Status.ABORTED.withDescription("the stream broke off (" + e.getMessage()
            + "); " + left).asRuntimeException()));
      } catch (RuntimeException e) {
        LOG.log(System.Logger.Level.ERROR, "receive into the replica of " + volume + " failed", e);
        answer(volume, () -> out.onError(Status.INTERNAL.withDescription("receive into the replica failed: "
            + e.getMessage()).asRuntimeException()));
      } finally {
        receiving.remove(volume);
      }
    });
  }

  /** The chunks as one stream; each taken chunk asks gRPC for the next. */
  private final class Chunks extends InputStream {
    private ByteString current = ByteString.EMPTY;
    private int position;
    private boolean ended;

    @Override
    public int read() throws IOException {
      byte[] one = new byte[1];
      return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      if (len == 0) {
        return 0;
      }
      while (position >= current.size()) {
        if (ended) {
          return -1;
        }
        Object next;
        try {
          next = chunks.take();
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted while waiting for the stream", e);
        }
        if (next == END) {
          ended = true;
          return -1;
        }
        if (next instanceof Broken(Throwable cause)) {
          ended = true;
          throw new IOException("the sender's stream broke off: " + Status.fromThrowable(cause), cause);
        }
        current = (ByteString) next;
        position = 0;
        out.request(1);
      }
      int n = Math.min(len, current.size() - position);
      current.copyTo(b, position, off, n);
      position += n;
      return n;
    }
  }

  /**
   * Answers the sender, unless the call has gone: a plugin stopping while a receive runs has shut the
   * call's transport down, and answering it then throws from the transport, not from the receive.
   */
  private static void answer(String volume, Runnable answer) {
    try {
      answer.run();
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.INFO, "the stream for the replica of {0} is gone; its answer is dropped: {1}",
          volume, e.toString());
    }
  }

}
