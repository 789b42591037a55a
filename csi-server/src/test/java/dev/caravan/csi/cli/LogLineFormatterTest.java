package dev.caravan.csi.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.TimeZone;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.SimpleFormatter;
import org.junit.jupiter.api.Test;

class LogLineFormatterTest {
  private static final String FORMAT = "java.util.logging.SimpleFormatter.format";

  /** SimpleFormatter with the serve command's pattern: the text LogLineFormatter must reproduce. */
  private static SimpleFormatter reference() {
    String before = System.getProperty(FORMAT);
    System.setProperty(FORMAT, LogLineFormatter.PATTERN);
    try {
      return new SimpleFormatter();
    } finally {
      if (before == null) {
        System.clearProperty(FORMAT);
      } else {
        System.setProperty(FORMAT, before);
      }
    }
  }

  private static LogRecord record(Level level, String message, Instant at) {
    LogRecord r = new LogRecord(level, message);
    r.setInstant(at);
    r.setLoggerName("dev.caravan.csi.rpc");
    r.setSourceClassName("dev.caravan.csi.server.CallLogInterceptor");
    r.setSourceMethodName("close");
    return r;
  }

  @Test
  void makesTheSameTextAsSimpleFormatterWithTheServePattern() {
    TimeZone before = TimeZone.getDefault();
    try {
      for (String zone : List.of("UTC", "Europe/Berlin", "America/St_Johns")) {
        TimeZone.setDefault(TimeZone.getTimeZone(zone));
        sameTextAsSimpleFormatter();
      }
    } finally {
      TimeZone.setDefault(before);
    }
  }

  private static void sameTextAsSimpleFormatter() {
    SimpleFormatter reference = reference();
    LogLineFormatter formatter = new LogLineFormatter();
    List<LogRecord> records = new ArrayList<>();
    Instant base = Instant.parse("2026-03-29T00:59:59.000Z"); // Berlin moves to summer time a second later
    for (long nanos : new long[] {0, 1_000_000, 9_999_999, 10_000_000, 99_000_000, 100_000_000, 999_999_999}) {
      records.add(record(Level.INFO, "rpc method=NodePublishVolume volume=v1 code=OK us=87", base.plusNanos(nanos)));
    }
    // the same second twice (the cached prefix), then the next second, minute, hour, day and year
    records.add(record(Level.INFO, "same second", base.plusMillis(5)));
    for (String at : List.of("2026-03-29T01:00:00.000Z", "2026-03-29T01:00:00.017Z", "2026-12-31T23:59:59.999Z",
        "2027-01-01T00:00:00.001Z", "1999-07-04T12:34:56.789Z")) {
      records.add(record(Level.WARNING, "line at " + at, Instant.parse(at)));
    }
    LogRecord withParameter = record(Level.INFO, "volume {0} is {1}", base);
    withParameter.setParameters(new Object[] {"vol-1", "staged"});
    records.add(withParameter);
    LogRecord withThrown = record(Level.SEVERE, "failed", base.plusMillis(250));
    withThrown.setThrown(new IllegalStateException("boom", new RuntimeException("cause")));
    records.add(withThrown);

    for (LogRecord r : records) {
      assertThat(formatter.format(r)).as("record at %s in %s: %s", r.getInstant(), TimeZone.getDefault().getID(), r.getMessage()).isEqualTo(reference.format(r));
    }
  }

  @Test
  void followsAChangeOfTheDefaultZoneWithinOneSecond() {
    TimeZone before = TimeZone.getDefault();
    LogLineFormatter formatter = new LogLineFormatter();
    Instant at = Instant.parse("2026-12-02T09:45:10.123Z");
    try {
      TimeZone.setDefault(TimeZone.getTimeZone("UTC"));
      assertThat(formatter.format(record(Level.INFO, "x", at))).startsWith("2026-12-02T09:45:10.123 INFO dev.caravan.csi.rpc x");
      TimeZone.setDefault(TimeZone.getTimeZone("Asia/Kolkata"));
      assertThat(formatter.format(record(Level.INFO, "x", at))).startsWith("2026-12-02T15:15:10.123 INFO ");
      assertThat(formatter.format(record(Level.INFO, "x", at))).isEqualTo(reference().format(record(Level.INFO, "x", at)));
    } finally {
      TimeZone.setDefault(before);
    }
  }
}
