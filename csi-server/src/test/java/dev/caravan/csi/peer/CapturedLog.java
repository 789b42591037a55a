package dev.caravan.csi.peer;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/** The lines the peer package logs while it is open, as {@code LEVEL message}. */
final class CapturedLog extends Handler implements AutoCloseable {
  /** Held so that the logger, and the handler on it, outlive the test's use of it. */
  private final Logger logger = Logger.getLogger("dev.caravan.csi.peer");
  private final List<String> lines = new CopyOnWriteArrayList<>();

  CapturedLog() {
    logger.addHandler(this);
  }

  @Override
  public void publish(LogRecord r) {
    lines.add(r.getLevel() + " " + new SimpleFormatter().formatMessage(r));
  }

  /** The lines that contain every one of {@code parts}. */
  List<String> matching(String... parts) {
    return lines.stream().filter(l -> List.of(parts).stream().allMatch(l::contains)).toList();
  }

  List<String> lines() {
    return List.copyOf(lines);
  }

  @Override
  public void flush() {}

  @Override
  public void close() {
    logger.removeHandler(this);
  }
}
