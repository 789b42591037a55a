package dev.caravan.storage.zfs;

import dev.caravan.storage.internal.zfs.Lzc;
import dev.caravan.storage.internal.zfs.NvList;
import dev.caravan.storage.internal.zfs.Pipe;
import dev.caravan.storage.internal.zfs.ZfsErrors;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code zfs send | zfs receive} inside this process: {@code lzc_send} writes a full stream of the
 * source snapshot into a pipe from a helper thread, {@code lzc_receive} reads it on the calling
 * thread and creates the new dataset with its snapshot.
 *
 * <p>Ending: the sender closes the write end when {@code lzc_send} returns, so the receiver sees the
 * end of the stream; the receiver closes the read end when {@code lzc_receive} returns, so a sender
 * still writing fails with EPIPE instead of blocking; the caller then joins the sender. A sender
 * failure is reported first (the receiver's error is then only its consequence).
 */
final class IndependentCopy {
  private IndependentCopy() {}

  /**
   * What happened on both ends.
   *
   * @param sent {@code lzc_send}'s result; null when the sender thread crashed
   * @param senderCrash what the sender thread threw, if it threw
   * @param received {@code lzc_receive}'s result
   */
  record Outcome(Lzc.Result sent, Throwable senderCrash, Lzc.Result received) {
    /** Whether the receive created the new dataset (then it is ours to clean up). */
    boolean createdTarget() {
      return received.ok();
    }

    /** Throws unless both ends succeeded, naming the end that failed first. */
    void orThrow(String source, String target) {
      if (senderCrash != null) {
        throw new ZfsException("send", source, ZfsErrors.EIO, Map.of(), senderCrash.toString());
      }
      boolean sendBrokenByReceiver =
          !received.ok()
              && (sent.errno() == ZfsErrors.EPIPE || sent.errno() == ZfsErrors.EINTR);
      if (!sent.ok() && !sendBrokenByReceiver) {
        // the sender failed first; the receiver only saw a stream that ended early
        ZfsFailures.orThrow(
            sent, "send", source, received.ok() ? null : "so receive into " + target + " failed too");
      }
      ZfsFailures.orThrow(received, "receive", target);
    }
  }

  /**
   * Streams {@code source} into the new {@code received} ({@code dataset@snapshot}), which carries
   * {@code properties} as received properties from the moment it exists. Never throws for a ZFS
   * error: the caller inspects the {@link Outcome}.
   */
  static Outcome run(String source, String received, Map<String, String> properties) {
    return run(source, received, properties, false);
  }

  /**
   * As {@link #run(String, String, Map)}; {@code raw} sends an encrypted source as it is stored
   * (no key needed) and the copy arrives encrypted, with the source's wrapping key.
   */
  static Outcome run(String source, String received, Map<String, String> properties, boolean raw) {
    AtomicReference<Lzc.Result> sent = new AtomicReference<>();
    AtomicReference<Throwable> senderCrash = new AtomicReference<>();
    Lzc.Result receiveResult;
    try (Pipe pipe = Pipe.open()) {
      Thread sender =
          Thread.ofPlatform()
              .name("zfs-send " + source)
              .daemon(true)
              .start(
                  () -> {
                    try {
                      sent.set(Lzc.send(source, pipe.writeFd(), Lzc.SEND_AS_STORED | (raw ? Lzc.SEND_RAW : 0)));
                    } catch (Throwable t) {
                      senderCrash.set(t);
                    } finally {
                      pipe.closeWriteEnd();
                    }
                  });
      try (NvList list = NvList.of(properties)) {
        receiveResult = Lzc.receive(received, list, raw, pipe.readFd());
      } finally {
        pipe.closeReadEnd();
        joinUninterruptibly(sender);
      }
    }
    return new Outcome(sent.get(), senderCrash.get(), receiveResult);
  }

  static void joinUninterruptibly(Thread thread) {
    boolean interrupted = false;
    while (true) {
      try {
        thread.join();
        break;
      } catch (InterruptedException e) {
        interrupted = true;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }
}
