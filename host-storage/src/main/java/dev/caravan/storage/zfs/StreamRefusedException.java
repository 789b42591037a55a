package dev.caravan.storage.zfs;

import java.util.Map;
import java.util.Objects;

/**
 * ZFS refused a stream for what the target holds, before it changed anything there. {@link
 * #reason()} says what the caller can do about it: most need a full stream instead of an
 * incremental one, or the partial receive on the target resumed or aborted first.
 */
public final class StreamRefusedException extends ZfsException {
  private static final long serialVersionUID = 1L;

  /** Why the stream does not fit the target. */
  public enum Reason {
    /**
     * The stream is incremental and the target lacks its base snapshot, or the target does not
     * exist: only a full stream can bring it up to date.
     */
    BASE_MISSING,
    /**
     * The target has the base snapshot, but it changed after it, or has later snapshots: roll it
     * back to the base, or replace it with a full stream.
     */
    TARGET_CHANGED,
    /** A full stream for a target that exists, or a snapshot of that name exists already. */
    TARGET_EXISTS,
    /**
     * A partial receive waits on the target: resume it ({@link ZfsStreams#resume}) or abort it
     * ({@link ZfsStreams#abortPartialReceive}) first.
     */
    PARTIAL_RECEIVE,
    /**
     * The sending side no longer has the snapshot (or the base) a resume token names: abort the
     * partial receive and send again.
     */
    SOURCE_GONE,
  }

  private final Reason reason;

  StreamRefusedException(
      Reason reason, String operation, String dataset, int errno, String explanation) {
    super(operation, dataset, errno, Map.of(), explanation);
    this.reason = Objects.requireNonNull(reason, "reason");
  }

  public Reason reason() {
    return reason;
  }
}
