package dev.caravan.csi.testing;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** A record file's text as a test compares it: the date line {@code Properties.store} writes left out. */
public final class RecordText {
  private RecordText() {}

  /** A record's text from its lines, each ended by a line feed as {@code Properties.store} ends them. */
  public static String of(String... lines) {
    return String.join("\n", lines) + "\n";
  }

  /** The text of {@code record} without its date line (the comment line after the first one). */
  public static String withoutDate(byte[] record) {
    return withoutDate(new String(record, StandardCharsets.UTF_8));
  }

  public static String withoutDate(String record) {
    List<String> lines = new ArrayList<>(record.lines().toList());
    if (lines.size() > 1 && lines.get(0).startsWith("#") && lines.get(1).startsWith("#")) {
      lines.remove(1);
    }
    return String.join("\n", lines) + "\n";
  }
}
