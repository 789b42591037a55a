package dev.caravan.csi.support;

import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * The text of the records the plugin keeps on disk (the file backend's volume and snapshot records
 * and freeze records, the node journal, DHV volumes): {@link Properties} stored through a writer, so
 * characters beyond Latin-1 stand as themselves rather than as {@code \}{@code uXXXX} escapes, then
 * encoded as UTF-8; read back from UTF-8 the same way.
 */
public final class PropertiesCodec {
  private PropertiesCodec() {}

  /**
   * The record's bytes: the comment line (none when {@code comment} is null), the date line
   * {@link Properties#store(java.io.Writer, String)} writes, and one line per key, in key order.
   */
  public static byte[] encode(Properties p, String comment) {
    StringWriter w = new StringWriter();
    try {
      p.store(w, comment);
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a StringWriter does not fail
    }
    return w.toString().getBytes(StandardCharsets.UTF_8);
  }

  /** The properties a record's bytes hold; comment lines are skipped. */
  public static Properties decode(byte[] bytes) {
    Properties p = new Properties();
    try {
      p.load(new StringReader(new String(bytes, StandardCharsets.UTF_8)));
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a StringReader does not fail
    }
    return p;
  }

  /**
   * The entries whose keys start with {@code prefix}, keyed by the rest of the key: how a record
   * keeps a map (a volume's context, a DHV volume's parameters) as {@code prefix + key = value}.
   */
  public static Map<String, String> withPrefix(Properties p, String prefix) {
    Map<String, String> entries = new TreeMap<>();
    for (String key : p.stringPropertyNames()) {
      if (key.startsWith(prefix)) {
        entries.put(key.substring(prefix.length()), p.getProperty(key));
      }
    }
    return entries;
  }
}
