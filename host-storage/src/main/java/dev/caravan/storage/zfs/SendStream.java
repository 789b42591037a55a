package dev.caravan.storage.zfs;

import dev.caravan.storage.internal.zfs.Lzc;
import dev.caravan.storage.internal.zfs.Pipe;
import dev.caravan.storage.internal.zfs.ZfsErrors;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.WritableByteChannel;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A send stream of one snapshot, ready to be written: full, incremental from an earlier snapshot
 * of the same dataset, or the rest of one a resumable receive stopped in. Made by {@link
 * ZfsStreams#full}, {@link ZfsStreams#incremental} and {@link ZfsStreams#resume}; each {@code
 * writeTo} sends it again from the start (or from the resume point).
 *
 * <p>Blocks travel as they are stored: large blocks, embedded data and compressed blocks stay so
 * ({@code LZC_SEND_FLAG_LARGE_BLOCK | EMBED_DATA | COMPRESS}), and an encrypted dataset's blocks
 * travel raw ({@code LZC_SEND_FLAG_RAW}), still encrypted, so the receiving side never needs (nor
 * gets) its key. A resumed stream takes the flags the interrupted one had, from its token.
 */
public final class SendStream {
  private final String snapshot;
  private final String from;
  private final int flags;
  private final ResumeToken resumed;

  SendStream(String snapshot, String from, int flags, ResumeToken resumed) {
    this.snapshot = Objects.requireNonNull(snapshot, "snapshot");
    this.from = from;
    this.flags = flags;
    this.resumed = resumed;
  }

  /** The snapshot the stream brings its receiver to, {@code dataset@name}. */
  public String snapshot() {
    return snapshot;
  }

  /** The earlier snapshot an incremental stream starts from; empty for a full stream. */
  public Optional<String> from() {
    return Optional.ofNullable(from);
  }

  /** Whether blocks travel raw: the dataset is encrypted and the stream carries no key. */
  public boolean raw() {
    return (flags & Lzc.SEND_RAW) != 0;
  }

  /** The token this stream resumes from; empty for a stream from the start. */
  public Optional<ResumeToken> resuming() {
    return Optional.ofNullable(resumed);
  }

  /**
   * The stream's estimated size in bytes, from the snapshots' block accounting ({@code
   * lzc_send_space}), without reading the data: for progress and lag figures, not exact. For a
   * resumed stream, what remains after the bytes the receiver already has.
   *
   * @throws ZfsException when ZFS cannot estimate it (a snapshot is gone...)
   */
  public long estimatedSize() {
    Lzc.Space space = Lzc.sendSpace(snapshot, from, flags);
    if (space.errno() != 0) {
      throw new ZfsException(
          "estimate the send of", snapshot, space.errno(), Map.of(), from == null ? null : "from " + from);
    }
    return resumed == null ? space.bytes() : Math.max(0, space.bytes() - resumed.bytesReceived());
  }

  /**
   * Writes the stream to {@code out}: {@code lzc_send} writes into a pipe on a helper thread while
   * this thread copies the pipe into {@code out}. {@code out} is not closed (after a failure it
   * holds a stream cut short, which a resumable receive keeps to resume).
   *
   * <p>Ending: when {@code out} fails, the pipe's read end is closed so {@code lzc_send} stops with
   * EPIPE rather than blocking, and {@code out}'s exception is thrown; when {@code lzc_send} fails,
   * the pipe ends, and its error is thrown. Either way the helper thread has ended on return.
   *
   * @return the bytes written
   * @throws IOException what {@code out} threw
   * @throws ZfsException when ZFS failed to send (with the errno)
   */
  public long writeTo(WritableByteChannel out) throws IOException {
    Objects.requireNonNull(out, "out");
    String operation = resumed == null ? "send" : "resume send";
    AtomicReference<Lzc.Result> sent = new AtomicReference<>();
    AtomicReference<Throwable> senderCrash = new AtomicReference<>();
    long bytes;
    try (Pipe pipe = Pipe.open()) {
      Thread sender =
          Thread.ofPlatform()
              .name("zfs-" + operation.replace(' ', '-') + " " + snapshot)
              .daemon(true)
              .start(
                  () -> {
                    try {
                      sent.set(send(pipe.writeFd()));
                    } catch (Throwable t) {
                      senderCrash.set(t);
                    } finally {
                      pipe.closeWriteEnd();
                    }
                  });
      try {
        bytes = pipe.drainTo(out);
      } catch (IOException | RuntimeException e) {
        pipe.closeReadEnd();
        IndependentCopy.joinUninterruptibly(sender);
        senderFailure(operation, sent.get(), senderCrash.get(), true).ifPresent(e::addSuppressed);
        throw e;
      }
      pipe.closeReadEnd();
      IndependentCopy.joinUninterruptibly(sender);
    }
    Optional<ZfsException> failed = senderFailure(operation, sent.get(), senderCrash.get(), false);
    if (failed.isPresent()) {
      throw failed.get();
    }
    return bytes;
  }

  /**
   * As {@link #writeTo(WritableByteChannel)}, into an {@link OutputStream} in writes of up to 256
   * KiB. {@code out} is not flushed nor closed.
   */
  public long writeTo(OutputStream out) throws IOException {
    Objects.requireNonNull(out, "out");
    return writeTo(StreamChannels.writingTo(out));
  }

  private Lzc.Result send(int fd) {
    if (resumed == null) {
      return Lzc.send(snapshot, from, fd, flags);
    }
    return Lzc.sendResume(snapshot, from, fd, flags, resumed.object(), resumed.offset());
  }

  /**
   * What the sender's own failure was, if it had one. When the consumer failed first ({@code
   * consumerFailed}), EPIPE and EINTR are only its consequence and not reported.
   */
  private Optional<ZfsException> senderFailure(
      String operation, Lzc.Result sent, Throwable crash, boolean consumerFailed) {
    if (crash != null) {
      ZfsException failure =
          new ZfsException(operation, snapshot, ZfsErrors.EIO, Map.of(), "the sending thread failed: " + crash);
      failure.initCause(crash);
      return Optional.of(failure);
    }
    if (sent == null || sent.ok()) {
      return Optional.empty();
    }
    if (consumerFailed && (sent.errno() == ZfsErrors.EPIPE || sent.errno() == ZfsErrors.EINTR)) {
      return Optional.empty();
    }
    String hint = from == null ? null : "from " + from;
    if (sent.errno() == ZfsErrors.EPIPE) {
      hint = "the stream's reader went away";
    }
    return Optional.of(new ZfsException(operation, snapshot, sent.errno(), sent.itemErrors(), hint));
  }

  @Override
  public String toString() {
    return (resumed != null ? "rest of the stream of " : from == null ? "full stream of " : "stream of ")
        + snapshot
        + (from == null ? "" : " from " + from)
        + (raw() ? " (raw)" : "");
  }
}
