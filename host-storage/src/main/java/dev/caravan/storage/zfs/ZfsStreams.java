package dev.caravan.storage.zfs;

import dev.caravan.storage.internal.zfs.Lzc;
import dev.caravan.storage.internal.zfs.NvList;
import dev.caravan.storage.internal.zfs.Pipe;
import dev.caravan.storage.internal.zfs.ZfsErrors;
import dev.caravan.storage.internal.zfs.ZfsIoctls;
import dev.caravan.storage.zfs.StreamRefusedException.Reason;
import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.ReadableByteChannel;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;

/**
 * ZFS send streams in and out of this process, for replication: a snapshot's stream written to a
 * Java channel or stream the caller supplies (and carries, to another node for example), and a
 * stream read from one received into a dataset here, resumably. Obtained from {@link Zfs#streams()}.
 *
 * <pre>{@code
 * ZfsStreams streams = zfs.streams();
 * // on the source
 * streams.full("tank/vol@r1").writeTo(out);
 * streams.incremental("tank/vol@r1", "tank/vol@r2").writeTo(out);
 * // on the replica
 * streams.receive("backup/vol@r2", in, Map.of("caravan:replica-of", "tank/vol"));
 * // after a cut: the replica hands its token to the source, which sends the rest
 * Optional<ResumeToken> token = streams.resumeToken("backup/vol");
 * streams.resume(token.orElseThrow()).writeTo(out);   // on the source
 * }</pre>
 *
 * <p><b>Replicas.</b> A received dataset is {@code readonly=on}, so nothing changes it between two
 * receives (a change after the base snapshot makes ZFS refuse the next incremental), and {@code
 * volmode=none}, so a received volume has no block device: nothing can mount or open it, and udev
 * does not probe it at every receive. Both are received properties: a copy made from one of its
 * snapshots (a restore) carries neither, since a send stream carries data, not properties. A
 * replica never carries the ownership marker ({@link ManagedBy}): it is not a volume of the facade's,
 * and {@link Zfs#finishCopy} must never take it for an unfinished copy; nor does a receive go into a
 * dataset that carries it.
 *
 * <p><b>Nothing is destroyed but a receive's own partial state:</b> {@link #abortPartialReceive}
 * destroys the hidden {@code %recv} child an interrupted incremental left, or the dataset an
 * interrupted full receive was creating, never anything else, and never recursively.
 */
public final class ZfsStreams {
  private static final long READONLY_ON = 1;
  private static final long VOLMODE_NONE = 3; // zfs_volmode_t: default, geom, dev, none
  /** The hidden child a receive into an existing dataset writes until it is complete. */
  private static final String PARTIAL_CHILD = "%recv";

  private final Zfs zfs;

  ZfsStreams(Zfs zfs) {
    this.zfs = Objects.requireNonNull(zfs, "zfs");
  }

  /**
   * What a receive made.
   *
   * @param snapshot the received snapshot, {@code dataset@name}
   * @param guid its GUID, the same as the sent snapshot's
   * @param bytes the bytes of the stream this receive passed to ZFS
   */
  public record Received(String snapshot, long guid, long bytes) {}

  // ------------------------------------------------------------------------------------------
  // Sending

  /**
   * A full stream of {@code snapshot}.
   *
   * @throws ZfsException with ENOENT when it does not exist
   */
  public SendStream full(String snapshot) {
    DatasetNames.requireSnapshot(snapshot);
    DatasetProperties source = zfs.properties(snapshot);
    return new SendStream(snapshot, null, flags(source), null);
  }

  /**
   * A stream of the changes from {@code from} to {@code to}, two snapshots of one dataset, {@code
   * from} the older; its receiver must hold {@code from} as its newest snapshot.
   *
   * @throws IllegalArgumentException when they are not snapshots of one dataset, or {@code from} is
   *     not the older
   * @throws ZfsException with ENOENT when one does not exist
   */
  public SendStream incremental(String from, String to) {
    DatasetNames.requireSnapshot(from);
    DatasetNames.requireSnapshot(to);
    if (!DatasetNames.datasetOf(from).equals(DatasetNames.datasetOf(to))) {
      throw new IllegalArgumentException(
          "an incremental stream goes between snapshots of one dataset: " + from + " and " + to);
    }
    DatasetProperties base = zfs.properties(from);
    DatasetProperties target = zfs.properties(to);
    if (Long.compareUnsigned(base.createTxg(), target.createTxg()) >= 0) {
      throw new IllegalArgumentException(
          "an incremental stream goes from an older snapshot to a newer one: " + from
              + " is not older than " + to);
    }
    return new SendStream(to, from, flags(target), null);
  }

  /**
   * The rest of the stream a resumable receive stopped in, from where {@code token} (read on the
   * receiving side, {@link #resumeToken}) says it stopped, with the flags the stream had. The
   * snapshot and its base are found here by GUID, so a snapshot renamed since is still found, and
   * one destroyed and made again under its name is not taken for it.
   *
   * @throws StreamRefusedException {@link Reason#SOURCE_GONE} when this side no longer has the
   *     snapshot or its base: abort the partial receive and send again
   * @throws IllegalArgumentException for a redacted stream's token (this library sends none)
   */
  public SendStream resume(ResumeToken token) {
    Objects.requireNonNull(token, "token");
    if (token.redacted()) {
      throw new IllegalArgumentException(
          "cannot resume " + token.snapshot() + ": it was a redacted send, which is not supported");
    }
    String dataset = DatasetNames.datasetOf(token.snapshot());
    String snapshot =
        snapshotWithGuid(dataset, token.snapshotGuid())
            .orElseThrow(() -> sourceGone(token, token.snapshot(), "no longer has that snapshot"));
    String from = null;
    if (token.fromGuid().isPresent()) {
      from =
          snapshotWithGuid(dataset, token.fromGuid().getAsLong())
              .orElseThrow(
                  () ->
                      sourceGone(
                          token,
                          dataset,
                          "no longer has the incremental base (guid "
                              + Long.toUnsignedString(token.fromGuid().getAsLong())
                              + ")"));
    }
    int flags =
        (token.largeBlocks() ? Lzc.SEND_LARGE_BLOCK : 0)
            | (token.embeddedData() ? Lzc.SEND_EMBED_DATA : 0)
            | (token.compressed() ? Lzc.SEND_COMPRESS : 0)
            | (token.raw() ? Lzc.SEND_RAW : 0);
    return new SendStream(snapshot, from, flags, token);
  }

  private static StreamRefusedException sourceGone(ResumeToken token, String name, String what) {
    return new StreamRefusedException(
        Reason.SOURCE_GONE,
        "resume send",
        name,
        ZfsErrors.ENOENT,
        "the sending side " + what + " (" + token + "): abort the partial receive and send again");
  }

  /** The snapshot of {@code dataset} with that GUID, by its current name. */
  private Optional<String> snapshotWithGuid(String dataset, long guid) {
    ZfsIoctls.Listing listing = zfs.ioctls().snapshots(dataset);
    if (listing.failure().isPresent() && listing.failure().get().errno() == ZfsErrors.ENOENT) {
      return Optional.empty(); // the dataset itself is gone
    }
    return ZfsFailures.entries(listing, "list snapshots", dataset).stream()
        .filter(s -> s.stats().guid() == guid)
        .map(ZfsIoctls.Reply::name)
        .findFirst();
  }

  /** As stored, and raw for an encrypted dataset. */
  private static int flags(DatasetProperties snapshot) {
    return Lzc.SEND_AS_STORED | (snapshot.isEncrypted() ? Lzc.SEND_RAW : 0);
  }

  // ------------------------------------------------------------------------------------------
  // Receiving

  /**
   * Receives a stream read from {@code stream} as {@code snapshot} ({@code dataset@name}): a full
   * stream creates the dataset (and missing parents, as {@code canmount=off} filesystems), an
   * incremental one applies onto the dataset's newest snapshot, the rest of an interrupted stream
   * ({@link #resume}) completes the partial receive it belongs to. {@code lzc_receive_resumable}
   * reads a pipe on a helper thread while this thread copies {@code stream} into it; {@code stream}
   * is read until it ends (it is not closed) or until ZFS stops reading.
   *
   * <p>A stream that breaks off (it throws, or ends early) leaves the receive partial and resumable:
   * {@link #resumeToken} then returns the token to send the rest from, and {@link
   * #abortPartialReceive} removes it instead.
   *
   * @param userProperties set as received properties on the dataset, beside {@code readonly=on} and
   *     {@code volmode=none} (see the class comment); never the ownership marker
   * @throws IOException what {@code stream} threw (the receive is then partial; ZFS's own error, if
   *     any, is attached as suppressed)
   * @throws StreamRefusedException when the stream does not fit the target (an incremental whose
   *     base it lacks, a target changed since, a partial receive pending...): nothing was changed
   * @throws ZfsException for other ZFS failures, for example a stream that ended early ({@code
   *     ZFS_ERR_STREAM_TRUNCATED}, {@code ECKSUM}), which leaves the receive partial and resumable
   * @throws IllegalArgumentException when the target dataset carries the ownership marker: a
   *     volume of the facade's is never a receive's target
   * @throws ZfsRefusedException when the pool is not imported or not usable
   */
  public Received receive(
      String snapshot, ReadableByteChannel stream, Map<String, String> userProperties)
      throws IOException {
    DatasetNames.requireSnapshot(snapshot);
    Objects.requireNonNull(stream, "stream");
    String target = DatasetNames.datasetOf(snapshot);
    DatasetNames.requireChild(target);
    Map<String, String> extra = UserProperties.checked(userProperties, zfs.marker());
    Optional<DatasetProperties> existing = zfs.find(target);
    if (existing.isPresent() && zfs.marker().marks(existing.get())) {
      throw new IllegalArgumentException(
          "refusing to receive into "
              + target
              + ": it carries "
              + zfs.marker()
              + ", so it is a volume of this manager's and not a replica");
    }
    zfs.requireUsablePool(target);
    zfs.createParents(target);

    AtomicReference<Lzc.Result> received = new AtomicReference<>();
    AtomicReference<Throwable> receiverCrash = new AtomicReference<>();
    Pipe.Filled filled;
    try (NvList properties = NvList.create();
        Pipe pipe = Pipe.open()) {
      properties.add("readonly", READONLY_ON).add("volmode", VOLMODE_NONE);
      extra.forEach(properties::add);
      Thread receiver =
          Thread.ofPlatform()
              .name("zfs-receive " + snapshot)
              .daemon(true)
              .start(
                  () -> {
                    try {
                      received.set(Lzc.receiveResumable(snapshot, properties, pipe.readFd()));
                    } catch (Throwable t) {
                      receiverCrash.set(t);
                    } finally {
                      pipe.closeReadEnd();
                    }
                  });
      try {
        filled = pipe.fillFrom(stream);
      } catch (IOException | RuntimeException e) {
        pipe.closeWriteEnd(); // the receive sees the stream end early and keeps what it has
        IndependentCopy.joinUninterruptibly(receiver);
        receiveFailure(snapshot, target, received.get(), receiverCrash.get()).ifPresent(e::addSuppressed);
        throw e;
      }
      pipe.closeWriteEnd();
      IndependentCopy.joinUninterruptibly(receiver);
    }
    Optional<ZfsException> failed = receiveFailure(snapshot, target, received.get(), receiverCrash.get());
    if (failed.isPresent()) {
      throw failed.get();
    }
    return new Received(snapshot, zfs.properties(snapshot).guid(), filled.bytes());
  }

  /**
   * As {@link #receive(String, ReadableByteChannel, Map)}, from an {@link InputStream} read in
   * chunks of up to 256 KiB.
   */
  public Received receive(String snapshot, InputStream stream, Map<String, String> userProperties)
      throws IOException {
    Objects.requireNonNull(stream, "stream");
    return receive(snapshot, StreamChannels.readingFrom(stream), userProperties);
  }

  private Optional<ZfsException> receiveFailure(
      String snapshot, String target, Lzc.Result result, Throwable crash) {
    if (crash != null) {
      ZfsException failure =
          new ZfsException("receive", snapshot, ZfsErrors.EIO, Map.of(), "the receiving thread failed: " + crash);
      failure.initCause(crash);
      return Optional.of(failure);
    }
    if (result == null || result.ok()) {
      return Optional.empty();
    }
    int errno = result.errno();
    Reason reason =
        switch (errno) {
          case ZfsErrors.ENODEV -> Reason.BASE_MISSING;
          case ZfsErrors.ENOENT -> zfs.exists(target) ? null : Reason.BASE_MISSING;
          case ZfsErrors.ETXTBSY -> Reason.TARGET_CHANGED;
          case ZfsErrors.EEXIST -> Reason.TARGET_EXISTS;
          case ZfsErrors.EBUSY -> partialState(target) ? Reason.PARTIAL_RECEIVE : null;
          default -> null;
        };
    if (reason != null) {
      return Optional.of(
          new StreamRefusedException(reason, "receive", snapshot, errno, explain(reason, target)));
    }
    String hint =
        partialState(target)
            ? "the partial receive is kept: resume it from "
                + target
                + "'s resume token, or abort it"
            : null;
    return Optional.of(new ZfsException("receive", snapshot, errno, result.itemErrors(), hint));
  }

  private static String explain(Reason reason, String target) {
    return switch (reason) {
      case BASE_MISSING ->
          target + " lacks the snapshot the incremental stream starts from"
              + " (or does not exist): send it in full";
      case TARGET_CHANGED ->
          target + " changed after the stream's base snapshot, or has later snapshots";
      case TARGET_EXISTS -> "a full stream for " + target + ", which exists (or has that snapshot)";
      case PARTIAL_RECEIVE ->
          "a partial receive waits on " + target + ": resume it or abort it first";
      case SOURCE_GONE -> "the sending side no longer has the stream's snapshot";
    };
  }

  private boolean partialState(String target) {
    return zfs.find(target).flatMap(DatasetProperties::receiveResumeToken).isPresent();
  }

  // ------------------------------------------------------------------------------------------
  // Partial receives

  /**
   * The resume token of an interrupted receive into {@code target}: of its hidden {@code %recv}
   * child for an incremental, of the dataset itself for a full receive that was creating it. Empty
   * when no receive waits there, or when {@code target} does not exist.
   */
  public Optional<ResumeToken> resumeToken(String target) {
    DatasetNames.requireChild(target);
    return zfs.find(target).flatMap(DatasetProperties::receiveResumeToken).map(ResumeToken::parse);
  }

  /**
   * Removes what an interrupted receive into {@code target} left, as {@code zfs receive -A} does:
   * the hidden {@code <target>/%recv} an incremental receive into the existing dataset was writing,
   * or, for a full receive that was creating {@code target}, that dataset itself, which then holds
   * nothing but the partial stream (ZFS marks it inconsistent and with a resume token). Nothing
   * else is destroyed, and nothing recursively.
   *
   * @return false when there was no partial receive to abort
   * @throws ZfsRefusedException when the partial dataset has snapshots or children (which no
   *     receive makes: it is not only the receive's)
   * @throws ZfsException when ZFS fails to destroy it (EBUSY while a receive still writes it)
   */
  public boolean abortPartialReceive(String target) {
    DatasetNames.requireChild(target);
    String partial = target + "/" + PARTIAL_CHILD;
    if (zfs.exists(partial)) {
      destroyPartial(partial);
      return true;
    }
    Optional<DatasetProperties> found = zfs.find(target);
    if (found.isEmpty()
        || !found.get().isInconsistent()
        || found.get().receiveResumeToken().isEmpty()) {
      return false;
    }
    if (!zfs.snapshots(target).isEmpty()) {
      throw new ZfsRefusedException(
          ZfsRefusedException.Reason.HAS_SNAPSHOTS,
          target,
          "refusing to abort the receive into " + target + ": it has snapshots, so it is not only the receive's");
    }
    if (!zfs.children(target).isEmpty()) {
      throw new ZfsRefusedException(
          ZfsRefusedException.Reason.HAS_CHILDREN,
          target,
          "refusing to abort the receive into " + target + ": it has children, so it is not only the receive's");
    }
    destroyPartial(target);
    return true;
  }

  // ------------------------------------------------------------------------------------------
  // Replicas

  /**
   * Destroys one snapshot of a replica: a dataset that carries the user property {@code
   * replicaProperty} (set by its receive) and not the ownership marker. Never deferred, never
   * recursive.
   *
   * @return false when it did not exist
   * @throws ZfsRefusedException when its dataset is not such a replica, or clones depend on it
   */
  public boolean destroyReplicaSnapshot(String snapshot, String replicaProperty) {
    DatasetNames.requireSnapshot(snapshot);
    Optional<DatasetProperties> found = zfs.find(snapshot);
    if (found.isEmpty()) {
      return false;
    }
    requireReplica(DatasetNames.datasetOf(snapshot), replicaProperty);
    if (found.get().clones() > 0) {
      throw new ZfsRefusedException(
          ZfsRefusedException.Reason.HAS_CLONES,
          snapshot,
          "refusing to destroy " + snapshot + ": " + found.get().clones() + " clone(s) depend on it");
    }
    Lzc.Result result = Zfs.retryWhileBusy(() -> Lzc.destroySnapshots(List.of(snapshot)));
    if (result.errno() == ZfsErrors.ENOENT) {
      return false;
    }
    ZfsFailures.orThrow(
        result, "destroy", snapshot, result.errno() == ZfsErrors.EBUSY ? "it is held or being sent" : null);
    return true;
  }

  /**
   * Destroys a replica dataset that has no snapshots and no children left (a leaf), when it carries
   * {@code replicaProperty} and not the ownership marker.
   *
   * @return false when it did not exist
   * @throws ZfsRefusedException when it is not such a replica, or still has snapshots or children
   */
  public boolean destroyReplica(String dataset, String replicaProperty) {
    DatasetNames.requireChild(dataset);
    if (zfs.find(dataset).isEmpty()) {
      return false;
    }
    requireReplica(dataset, replicaProperty);
    if (!zfs.children(dataset).isEmpty()) {
      throw new ZfsRefusedException(
          ZfsRefusedException.Reason.HAS_CHILDREN,
          dataset,
          "refusing to destroy " + dataset + ": it has children " + zfs.children(dataset));
    }
    if (!zfs.snapshots(dataset).isEmpty()) {
      throw new ZfsRefusedException(
          ZfsRefusedException.Reason.HAS_SNAPSHOTS,
          dataset,
          "refusing to destroy " + dataset + ": it has snapshots " + zfs.snapshots(dataset));
    }
    Lzc.Result result = Zfs.retryWhileBusy(() -> Lzc.destroy(dataset));
    if (result.errno() == ZfsErrors.ENOENT) {
      return false;
    }
    ZfsFailures.orThrow(result, "destroy", dataset, null);
    return true;
  }

  private void requireReplica(String dataset, String replicaProperty) {
    DatasetProperties p = zfs.properties(dataset);
    if (zfs.marker().marks(p) || p.userProperty(replicaProperty).isEmpty()) {
      throw new ZfsRefusedException(
          ZfsRefusedException.Reason.NOT_MANAGED,
          dataset,
          "refusing to destroy in " + dataset + ": it is not a replica (it "
              + (zfs.marker().marks(p) ? "carries " + zfs.marker() : "lacks " + replicaProperty) + ")");
    }
  }

  private static void destroyPartial(String dataset) {
    Lzc.Result result = Zfs.retryWhileBusy(() -> Lzc.destroy(dataset));
    if (result.errno() == ZfsErrors.ENOENT) {
      return; // another caller aborted it meanwhile
    }
    ZfsFailures.orThrow(
        result,
        "abort the partial receive",
        dataset,
        result.errno() == ZfsErrors.EBUSY ? "is a receive still writing it?" : null);
  }
}
