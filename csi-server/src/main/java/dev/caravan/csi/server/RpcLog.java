package dev.caravan.csi.server;

import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.netty.shaded.io.netty.util.concurrent.EventExecutor;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.LockSupport;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Writes the per-RPC log lines ({@link CallLogInterceptor}) on a thread of its own. A call hands over
 * the line's parts, not the line: the text is built, sanitized and formatted here. The calling thread
 * may be the event loop, and the handler behind the logger writes to stderr, which under Nomad is a
 * pipe that can fill and block; a call must never wait for that, nor spend its time formatting.
 *
 * <p>Every line is written, in the order the calls ended: except that when {@link #CAPACITY} lines are
 * waiting (stderr stalled for a long time), the caller writes its own line at once, as before this
 * queue existed, rather than lose it. The writer sleeps (no timer) whenever the queue is empty; a
 * line added then wakes it.
 *
 * <p>A line added on an event loop wakes the writer from a task queued on that loop, not at once: the
 * call's response is written by a flush task that {@code close} has already queued there, so the
 * response's {@code writev} goes out first and the writer's wake-up ({@code futex}) and its work do not
 * come between a call's answer and the client (strace of a Probe shows the response's write before the
 * wake-up; waking at once puts the wake-up first).
 */
final class RpcLog implements AutoCloseable {
  static final Logger LINES = Logger.getLogger("dev.caravan.csi.rpc");
  static final int CAPACITY = 4096;
  private static final Duration DRAIN = Duration.ofSeconds(2);

  /**
   * One line's parts: {@code method} the full method name ({@code csi.v1.Node/NodePublishVolume}),
   * {@code subject} the raw id from the request or null; both are cut and sanitized when written.
   */
  record Line(long epochMillis, String method, String subject, Status.Code code, long micros, String error) {}

  private final BlockingQueue<Line> queue = new ArrayBlockingQueue<>(CAPACITY);
  private volatile boolean parked;
  private volatile boolean closed;
  private final Thread writer;
  private final Iterable<? extends EventExecutor> loops;
  private final Runnable wake;

  private RpcLog(Iterable<? extends EventExecutor> loops) {
    writer = Thread.ofPlatform().name("caravan-rpc-log").daemon(true).unstarted(this::run);
    this.loops = loops;
    wake = () -> LockSupport.unpark(writer);
  }

  /** A log whose lines are added from any thread; each wakes the writer at once. */
  static RpcLog start() {
    return start(List.of());
  }

  /** A log whose lines added on one of {@code loops} wake the writer after that loop's queued tasks. */
  static RpcLog start(Iterable<? extends EventExecutor> loops) {
    RpcLog log = new RpcLog(loops);
    log.writer.start();
    return log;
  }

  /** Whether lines are written at all (the logger's level); cheap, for the caller to skip the work. */
  static boolean enabled() {
    return LINES.isLoggable(Level.INFO);
  }

  void add(Line line) {
    if (closed || !queue.offer(line)) {
      write(line); // closed, or the queue is full (stderr stalled): never lose a line
      return;
    }
    if (parked) {
      wakeWriter();
    }
  }

  private void wakeWriter() {
    for (EventExecutor loop : loops) {
      if (loop.inEventLoop()) {
        try {
          loop.execute(wake); // after the response's flush, which close() queued before this line was added
          return;
        } catch (RejectedExecutionException stopping) {
          break; // the loop is shutting down: wake the writer now
        }
      }
    }
    wake.run();
  }

  private void run() {
    while (true) {
      Line line = queue.poll();
      if (line != null) {
        write(line);
        continue;
      }
      if (closed) {
        return;
      }
      // Announce the park before the last look, so that a line added after that look unparks us.
      parked = true;
      if (queue.isEmpty() && !closed) {
        LockSupport.park(this);
      }
      parked = false;
    }
  }

  private static void write(Line l) {
    String text = "rpc method=" + MethodDescriptor.extractBareMethodName(l.method()) + " volume=" + (l.subject() == null ? "-" : sanitize(l.subject()))
        + " code=" + l.code() + " us=" + l.micros() + (l.error() == null ? "" : " error=\"" + l.error() + "\"");
    LogRecord r = new LogRecord(Level.INFO, text);
    r.setInstant(Instant.ofEpochMilli(l.epochMillis()));
    r.setLoggerName(LINES.getName());
    // Named here, so the handler's formatter does not walk the stack to find the source.
    r.setSourceClassName(CallLogInterceptor.class.getName());
    r.setSourceMethodName("close");
    LINES.log(r);
  }

  /** Keeps log lines single-line and bounded whatever the client sent. */
  static String sanitize(String value) {
    String v = value.length() > 128 ? value.substring(0, 128) + "..." : value;
    StringBuilder out = new StringBuilder(v.length());
    for (int i = 0; i < v.length(); i++) {
      char c = v.charAt(i);
      out.append(Character.isISOControl(c) || c == ' ' || c == '"' ? '?' : c);
    }
    return out.toString();
  }

  /** Writes what is queued (waiting for it a bounded time) and stops the writer; later lines are written by their caller. */
  @Override
  public void close() {
    closed = true;
    LockSupport.unpark(writer);
    try {
      writer.join(DRAIN);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
