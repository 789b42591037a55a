package dev.caravan.csi.observe;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A small, strict JSON writer and reader, enough for the observe API and Nomad's answers. Writing
 * turns {@code Map} (string keys, order kept), {@code Collection}, {@code Optional} (empty = null),
 * {@code String}, {@code Number}, {@code Boolean}, {@code null} and anything else (by
 * {@code toString()}) into JSON; reading yields {@code LinkedHashMap}, {@code ArrayList},
 * {@code String}, {@code Long} or {@code BigDecimal}, {@code Boolean} and {@code null}.
 */
public final class Json {
  private Json() {}

  // ---- writing ---------------------------------------------------------------------------------

  public static String write(Object value) {
    StringBuilder out = new StringBuilder();
    write(out, value, 0, true);
    return out.toString();
  }

  /** Indented, for people (the CLI prints it). */
  public static String pretty(Object value) {
    StringBuilder out = new StringBuilder();
    write(out, value, 0, false);
    return out.append('\n').toString();
  }

  private static void write(StringBuilder out, Object value, int depth, boolean compact) {
    switch (value) {
      case null -> out.append("null");
      case Optional<?> o -> write(out, o.orElse(null), depth, compact);
      case String s -> quote(out, s);
      case Boolean b -> out.append(b.booleanValue());
      case Double d when d.isNaN() || d.isInfinite() -> out.append("null");
      case Float f when f.isNaN() || f.isInfinite() -> out.append("null");
      case Number n -> out.append(n);
      case Map<?, ?> m -> {
        out.append('{');
        boolean first = true;
        for (Map.Entry<?, ?> e : m.entrySet()) {
          if (!first) {
            out.append(',');
          }
          first = false;
          newline(out, depth + 1, compact);
          quote(out, String.valueOf(e.getKey()));
          out.append(compact ? ":" : ": ");
          write(out, e.getValue(), depth + 1, compact);
        }
        if (!m.isEmpty()) {
          newline(out, depth, compact);
        }
        out.append('}');
      }
      case Collection<?> c -> {
        out.append('[');
        boolean first = true;
        for (Object item : c) {
          if (!first) {
            out.append(',');
          }
          first = false;
          newline(out, depth + 1, compact);
          write(out, item, depth + 1, compact);
        }
        if (!c.isEmpty()) {
          newline(out, depth, compact);
        }
        out.append(']');
      }
      default -> quote(out, value.toString());
    }
  }

  private static void newline(StringBuilder out, int depth, boolean compact) {
    if (!compact) {
      out.append('\n').append("  ".repeat(depth));
    }
  }

  static void quote(StringBuilder out, String s) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        default -> {
          // Control characters, and U+2028/2029 (line breaks to JavaScript), as \\uXXXX; lone
          // surrogates too, so the output is always valid UTF-8.
          boolean loneSurrogate = Character.isSurrogate(c)
              && !(Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1)))
              && !(Character.isLowSurrogate(c) && i > 0 && Character.isHighSurrogate(s.charAt(i - 1)));
          if (c < 0x20 || c == 0x2028 || c == 0x2029 || c == 0x7f || loneSurrogate) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }

  // ---- reading ---------------------------------------------------------------------------------

  /** Parses one JSON value (RFC 8259); anything else, including trailing text, is an error. */
  public static Object parse(String text) {
    Reader r = new Reader(text);
    r.space();
    Object v = r.value(0);
    r.space();
    if (r.pos != text.length()) {
      throw r.error("trailing characters");
    }
    return v;
  }

  /** Thrown for malformed JSON, with the offset. */
  public static final class ParseException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    ParseException(String message) {
      super(message);
    }
  }

  private static final class Reader {
    private static final int MAX_DEPTH = 64;
    private final String s;
    private int pos;

    Reader(String s) {
      this.s = s;
    }

    ParseException error(String what) {
      return new ParseException("malformed JSON at offset " + pos + ": " + what);
    }

    void space() {
      while (pos < s.length() && " \t\r\n".indexOf(s.charAt(pos)) >= 0) {
        pos++;
      }
    }

    Object value(int depth) {
      if (depth > MAX_DEPTH) {
        throw error("nested too deeply");
      }
      if (pos >= s.length()) {
        throw error("unexpected end");
      }
      char c = s.charAt(pos);
      return switch (c) {
        case '{' -> object(depth);
        case '[' -> array(depth);
        case '"' -> string();
        case 't' -> literal("true", true);
        case 'f' -> literal("false", false);
        case 'n' -> literal("null", null);
        default -> {
          if (c == '-' || (c >= '0' && c <= '9')) {
            yield number();
          }
          throw error("unexpected character '" + c + "'");
        }
      };
    }

    private Object literal(String word, Object value) {
      if (!s.startsWith(word, pos)) {
        throw error("expected " + word);
      }
      pos += word.length();
      return value;
    }

    private Map<String, Object> object(int depth) {
      Map<String, Object> m = new LinkedHashMap<>();
      pos++;
      space();
      if (peek() == '}') {
        pos++;
        return m;
      }
      while (true) {
        space();
        if (peek() != '"') {
          throw error("expected a string key");
        }
        String key = string();
        space();
        expect(':');
        space();
        m.put(key, value(depth + 1));
        space();
        char c = next();
        if (c == '}') {
          return m;
        }
        if (c != ',') {
          pos--;
          throw error("expected ',' or '}'");
        }
      }
    }

    private List<Object> array(int depth) {
      List<Object> list = new ArrayList<>();
      pos++;
      space();
      if (peek() == ']') {
        pos++;
        return list;
      }
      while (true) {
        space();
        list.add(value(depth + 1));
        space();
        char c = next();
        if (c == ']') {
          return list;
        }
        if (c != ',') {
          pos--;
          throw error("expected ',' or ']'");
        }
      }
    }

    private String string() {
      expect('"');
      StringBuilder out = new StringBuilder();
      while (true) {
        char c = next();
        if (c == '"') {
          return out.toString();
        }
        if (c < 0x20) {
          pos--;
          throw error("control character in string");
        }
        if (c != '\\') {
          out.append(c);
          continue;
        }
        char e = next();
        switch (e) {
          case '"', '\\', '/' -> out.append(e);
          case 'b' -> out.append('\b');
          case 'f' -> out.append('\f');
          case 'n' -> out.append('\n');
          case 'r' -> out.append('\r');
          case 't' -> out.append('\t');
          case 'u' -> {
            if (pos + 4 > s.length()) {
              throw error("short \\u escape");
            }
            try {
              out.append((char) Integer.parseInt(s.substring(pos, pos + 4), 16));
            } catch (NumberFormatException x) {
              throw error("bad \\u escape");
            }
            pos += 4;
          }
          default -> {
            pos--;
            throw error("bad escape \\" + e);
          }
        }
      }
    }

    private Object number() {
      int start = pos;
      if (peek() == '-') {
        pos++;
      }
      if (peek() == '0') {
        pos++;
      } else if (peek() >= '1' && peek() <= '9') {
        digits();
      } else {
        throw error("bad number");
      }
      boolean integral = true;
      if (peek() == '.') {
        integral = false;
        pos++;
        if (!(peek() >= '0' && peek() <= '9')) {
          throw error("bad fraction");
        }
        digits();
      }
      if (peek() == 'e' || peek() == 'E') {
        integral = false;
        pos++;
        if (peek() == '+' || peek() == '-') {
          pos++;
        }
        if (!(peek() >= '0' && peek() <= '9')) {
          throw error("bad exponent");
        }
        digits();
      }
      String text = s.substring(start, pos);
      if (integral) {
        try {
          return Long.parseLong(text);
        } catch (NumberFormatException tooBig) {
          return new BigDecimal(text);
        }
      }
      return new BigDecimal(text);
    }

    private void digits() {
      while (peek() >= '0' && peek() <= '9') {
        pos++;
      }
    }

    private char peek() {
      return pos < s.length() ? s.charAt(pos) : '\0';
    }

    private char next() {
      if (pos >= s.length()) {
        throw error("unexpected end");
      }
      return s.charAt(pos++);
    }

    private void expect(char c) {
      if (next() != c) {
        pos--;
        throw error("expected '" + c + "'");
      }
    }
  }
}
