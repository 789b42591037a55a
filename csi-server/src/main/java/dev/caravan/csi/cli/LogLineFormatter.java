package dev.caravan.csi.cli;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneId;
import java.time.temporal.ChronoField;
import java.util.logging.Formatter;
import java.util.logging.LogRecord;

/**
 * Formats a record as {@code caravan serve} always has, {@code 2026-12-02T09:45:10.123 INFO logger
 * message}, local time, one line (a throwable's stack trace after it), byte for byte what {@link
 * java.util.logging.SimpleFormatter} makes of {@link #PATTERN}, without its {@link String#format}: the
 * server writes a line per RPC, and formatting the timestamp through {@code String.format} costs tens of
 * microseconds of CPU a line on a small node, which competes with the calls themselves for the cores.
 * The text up to the second is kept from the previous line while the second (and the zone) is the same.
 */
public final class LogLineFormatter extends Formatter {
  /** The {@code SimpleFormatter} pattern this formatter reproduces. */
  public static final String PATTERN = "%1$tFT%1$tT.%1$tL %4$s %3$s %5$s%6$s%n";

  private static final String NEWLINE = System.lineSeparator();

  /** Up to and including the seconds' dot, for one second in one zone. */
  private record Second(long epochSecond, ZoneId zone, String text) {}

  private volatile Second last = new Second(Long.MIN_VALUE, ZoneId.systemDefault(), "");

  @Override
  public String format(LogRecord record) {
    Instant at = record.getInstant();
    StringBuilder line = new StringBuilder(160);
    line.append(second(at).text());
    int millis = at.get(ChronoField.MILLI_OF_SECOND);
    if (millis < 100) {
      line.append('0');
    }
    if (millis < 10) {
      line.append('0');
    }
    line.append(millis).append(' ').append(record.getLevel().getLocalizedName()).append(' ')
        .append(record.getLoggerName()).append(' ').append(formatMessage(record));
    Throwable thrown = record.getThrown();
    if (thrown != null) {
      StringWriter trace = new StringWriter();
      try (PrintWriter out = new PrintWriter(trace)) {
        out.println();
        thrown.printStackTrace(out);
      }
      line.append(trace);
    }
    return line.append(NEWLINE).toString();
  }

  private Second second(Instant at) {
    // The zone is looked up each time, as SimpleFormatter does: a changed TZ default shows at once.
    ZoneId zone = ZoneId.systemDefault();
    Second s = last;
    if (s.epochSecond() == at.getEpochSecond() && s.zone().equals(zone)) {
      return s;
    }
    LocalDateTime t = LocalDateTime.ofInstant(at, zone);
    StringBuilder text = new StringBuilder(20);
    pad(text, t.getYear(), 4).append('-');
    pad(text, t.getMonthValue(), 2).append('-');
    pad(text, t.getDayOfMonth(), 2).append('T');
    pad(text, t.getHour(), 2).append(':');
    pad(text, t.getMinute(), 2).append(':');
    pad(text, t.getSecond(), 2).append('.');
    s = new Second(at.getEpochSecond(), zone, text.toString());
    last = s;
    return s;
  }

  private static StringBuilder pad(StringBuilder out, int value, int width) {
    String digits = Integer.toString(value);
    for (int i = digits.length(); i < width; i++) {
      out.append('0');
    }
    return out.append(digits);
  }
}
