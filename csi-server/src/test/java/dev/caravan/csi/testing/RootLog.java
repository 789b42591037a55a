package dev.caravan.csi.testing;

import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

/**
 * What an in-process plugin logs while a test runs, as the text its console handler would print:
 * the tests that prove a secret reaches no log line search it.
 */
public final class RootLog extends Handler implements AutoCloseable {
  private final SimpleFormatter format = new SimpleFormatter();
  private final StringBuilder text = new StringBuilder();

  private RootLog() {}

  /** Starts capturing every record the root logger receives, until {@link #close()}. */
  public static RootLog capture() {
    RootLog log = new RootLog();
    Logger.getLogger("").addHandler(log);
    return log;
  }

  @Override
  public void publish(LogRecord record) {
    String line = format.format(record);
    synchronized (text) {
      text.append(line);
    }
  }

  /** Everything captured so far. */
  public String text() {
    synchronized (text) {
      return text.toString();
    }
  }

  @Override
  public void flush() {}

  @Override
  public void close() {
    Logger.getLogger("").removeHandler(this);
  }
}
