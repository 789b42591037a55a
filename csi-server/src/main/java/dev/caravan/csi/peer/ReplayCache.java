package dev.caravan.csi.peer;

import com.google.protobuf.Message;
import dev.caravan.csi.backend.CsiException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.function.Supplier;

/**
 * Runs each idempotency key's call once: a repeated key gets the first call's answer (success or
 * status) without running anything again, also while the first is still running; the same key with
 * a different request is refused. Keys are remembered for {@link #TTL}, at most {@link #MAX_KEYS} of
 * them, in memory: a replay after the owner restarts runs again, and is then only as harmless as the
 * CSI call itself (every one is idempotent by name or id).
 */
final class ReplayCache {
  static final Duration TTL = Duration.ofMinutes(15);
  static final int MAX_KEYS = 10_000;

  private record Entry(Message request, Instant at, CompletableFuture<Object> answer) {}

  private final Map<String, Entry> entries = new LinkedHashMap<>();
  private final Clock clock;

  ReplayCache(Clock clock) {
    this.clock = clock;
  }

  @SuppressWarnings("unchecked") // the entry's answer is of the type the first call with this key returned
  <R> R once(String key, Message request, Supplier<R> call) {
    CompletableFuture<Object> answer;
    boolean first;
    synchronized (entries) {
      evict();
      Entry e = entries.get(key);
      if (e != null && !e.request().equals(request)) {
        throw Status.INVALID_ARGUMENT.withDescription("idempotency_key " + key + " was already used for a different"
            + " request; every call needs a fresh key").asRuntimeException();
      }
      first = e == null;
      if (first) {
        e = new Entry(request, clock.instant(), new CompletableFuture<>());
        entries.put(key, e);
      }
      answer = e.answer();
    }
    if (first) {
      try {
        answer.complete(call.get());
      } catch (RuntimeException ex) {
        answer.completeExceptionally(ex);
      }
    }
    try {
      return (R) answer.get();
    } catch (InterruptedException ex) {
      Thread.currentThread().interrupt();
      throw Status.CANCELLED.withDescription("interrupted").asRuntimeException();
    } catch (ExecutionException ex) {
      if (ex.getCause() instanceof StatusRuntimeException s) {
        throw s;
      }
      if (ex.getCause() instanceof CsiException c) {
        throw c; // mapped to its status by the service, like any other call's
      }
      throw Status.fromThrowable(ex.getCause()).asRuntimeException();
    }
  }

  private void evict() {
    Instant oldest = clock.instant().minus(TTL);
    Iterator<Entry> it = entries.values().iterator();
    while (it.hasNext()) {
      Entry e = it.next();
      if (entries.size() > MAX_KEYS || e.at().isBefore(oldest)) {
        it.remove();
      } else {
        break; // insertion order: the rest are younger
      }
    }
  }
}
