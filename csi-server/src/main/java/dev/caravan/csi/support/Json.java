package dev.caravan.csi.support;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonFactoryBuilder;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.SerializableString;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.core.io.CharacterEscapes;
import com.fasterxml.jackson.core.io.SerializedString;
import com.fasterxml.jackson.core.util.DefaultIndenter;
import com.fasterxml.jackson.core.util.DefaultPrettyPrinter;
import com.fasterxml.jackson.core.util.Separators;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * JSON for the observe API, Nomad's answers and the DHV protocol, through Jackson's streaming API.
 * Writing turns {@code Map} (string keys, order kept), {@code Collection}, {@code Optional} (empty =
 * null), {@code String}, {@code Number} (NaN and infinities as null), {@code Boolean}, {@code null}
 * and anything else (by {@code toString()}) into JSON; reading (RFC 8259, strict) yields
 * {@code LinkedHashMap}, {@code ArrayList}, {@code String}, {@code Long} or {@code BigDecimal},
 * {@code Boolean} and {@code null}.
 */
public final class Json {
  private static final int MAX_DEPTH = 64;

  private static final JsonFactory FACTORY = new JsonFactoryBuilder()
      .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH).build())
      .characterEscapes(new Escapes())
      .build();

  private static final DefaultPrettyPrinter PRETTY = new DefaultPrettyPrinter(Separators.createDefaultInstance()
      .withObjectFieldValueSpacing(Separators.Spacing.AFTER)
      .withObjectEmptySeparator("")
      .withArrayEmptySeparator(""))
      .withObjectIndenter(new DefaultIndenter("  ", "\n"))
      .withArrayIndenter(new DefaultIndenter("  ", "\n"));

  private Json() {}

  // ---- writing ---------------------------------------------------------------------------------

  public static String write(Object value) {
    return write(value, false);
  }

  /** Indented, for people (the CLI prints it). */
  public static String pretty(Object value) {
    return write(value, true) + "\n";
  }

  private static String write(Object value, boolean pretty) {
    StringWriter out = new StringWriter();
    try (JsonGenerator g = FACTORY.createGenerator(out)) {
      if (pretty) {
        g.setPrettyPrinter(PRETTY);
      }
      write(g, value);
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a StringWriter does not fail
    }
    return loneSurrogatesEscaped(out.toString());
  }

  private static void write(JsonGenerator g, Object value) throws IOException {
    switch (value) {
      case null -> g.writeNull();
      case Optional<?> o -> write(g, o.orElse(null));
      case String s -> g.writeString(s);
      case Boolean b -> g.writeBoolean(b);
      case Double d when d.isNaN() || d.isInfinite() -> g.writeNull();
      case Float f when f.isNaN() || f.isInfinite() -> g.writeNull();
      case Number n -> g.writeNumber(n.toString());
      case Map<?, ?> m -> {
        g.writeStartObject();
        for (Map.Entry<?, ?> e : m.entrySet()) {
          g.writeFieldName(String.valueOf(e.getKey()));
          write(g, e.getValue());
        }
        g.writeEndObject();
      }
      case Collection<?> c -> {
        g.writeStartArray();
        for (Object item : c) {
          write(g, item);
        }
        g.writeEndArray();
      }
      default -> g.writeString(value.toString());
    }
  }

  /**
   * Control characters, DEL and U+2028/2029 (line breaks to JavaScript) as {@code \\uXXXX}, lower
   * case; Jackson's own short escapes ({@code \\n}, {@code \\"}, ...) for the rest.
   */
  private static final class Escapes extends CharacterEscapes {
    private static final long serialVersionUID = 1L;
    private final int[] ascii;

    Escapes() {
      ascii = standardAsciiEscapesForJSON();
      for (int c = 0; c < 0x20; c++) {
        if (ascii[c] == ESCAPE_STANDARD) {
          ascii[c] = ESCAPE_CUSTOM;
        }
      }
      ascii[0x7f] = ESCAPE_CUSTOM;
    }

    @Override
    public int[] getEscapeCodesForAscii() {
      return ascii.clone();
    }

    @Override
    public SerializableString getEscapeSequence(int ch) {
      return ch < 0x20 || ch == 0x7f || ch == 0x2028 || ch == 0x2029
          ? new SerializedString(String.format(Locale.ROOT, "\\u%04x", ch)) : null;
    }
  }

  /**
   * A lone surrogate can only stand inside a string of the output; as {@code \\uXXXX} the output is
   * valid UTF-8 (Jackson's character escapes see one char at a time, so cannot tell it from a pair).
   */
  private static String loneSurrogatesEscaped(String s) {
    StringBuilder out = null;
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      boolean lone = Character.isSurrogate(c)
          && !(Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1)))
          && !(Character.isLowSurrogate(c) && i > 0 && Character.isHighSurrogate(s.charAt(i - 1)));
      if (lone && out == null) {
        out = new StringBuilder(s.length() + 8).append(s, 0, i);
      }
      if (out != null) {
        out.append(lone ? String.format(Locale.ROOT, "\\u%04x", (int) c) : String.valueOf(c));
      }
    }
    return out == null ? s : out.toString();
  }

  // ---- reading ---------------------------------------------------------------------------------

  /** Parses one JSON value (RFC 8259); anything else, including trailing text, is an error. */
  public static Object parse(String text) {
    try (JsonParser p = FACTORY.createParser(text)) {
      if (p.nextToken() == null) {
        throw new ParseException("malformed JSON at offset 0: unexpected end");
      }
      Object v = value(p);
      if (p.nextToken() != null) {
        throw new ParseException("malformed JSON at offset " + p.currentTokenLocation().getCharOffset()
            + ": trailing characters");
      }
      return v;
    } catch (StreamConstraintsException e) {
      throw new ParseException("malformed JSON: nested too deeply (more than " + MAX_DEPTH + " levels)");
    } catch (JsonProcessingException e) {
      long offset = e.getLocation() == null ? -1 : e.getLocation().getCharOffset();
      throw new ParseException("malformed JSON at offset " + offset + ": " + e.getOriginalMessage());
    } catch (IOException e) {
      throw new ParseException("malformed JSON: " + e.getMessage());
    }
  }

  private static Object value(JsonParser p) throws IOException {
    return switch (p.currentToken()) {
      case START_OBJECT -> {
        Map<String, Object> m = new LinkedHashMap<>();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String key = p.currentName();
          p.nextToken();
          m.put(key, value(p));
        }
        yield m;
      }
      case START_ARRAY -> {
        List<Object> list = new ArrayList<>();
        while (p.nextToken() != JsonToken.END_ARRAY) {
          list.add(value(p));
        }
        yield list;
      }
      case VALUE_STRING -> p.getText();
      case VALUE_NUMBER_INT -> p.getNumberType() == JsonParser.NumberType.BIG_INTEGER
          ? new BigDecimal(p.getBigIntegerValue()) : (Object) p.getLongValue();
      case VALUE_NUMBER_FLOAT -> p.getDecimalValue();
      case VALUE_TRUE -> true;
      case VALUE_FALSE -> false;
      case VALUE_NULL -> null;
      default -> throw new ParseException("malformed JSON: unexpected " + p.currentToken());
    };
  }

  /** Thrown for malformed JSON, with the offset. */
  public static final class ParseException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    ParseException(String message) {
      super(message);
    }
  }
}
