package dev.caravan.csi.config;

import java.math.BigDecimal;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A strict reader of HCL's native syntax (the one Nomad jobspecs and agent configs are written in):
 * attributes, blocks with labels, strings with escapes, heredocs, numbers, booleans, null, lists,
 * objects and the three comment forms. Anything else (references, function calls, operators,
 * templates) is kept as source text ({@link Value.Expr}, or a {@link Value.Str} marked
 * interpolated): it is Nomad's to evaluate, and a Caravan config refuses it.
 *
 * <p>Written here because the one HCL parser on Maven Central (hcl4j 0.9.4) accepts an unclosed
 * block (its attributes land in the enclosing body), reads {@code url =} as null and {@code 1.5e3}
 * as "e3", lets a repeated attribute silently win, reports no line for a value, and pulls in an HTTP
 * client and commons-beanutils 1.9.4 for data lookups a config file must not make.
 */
public final class Hcl {
  private static final Pattern NUMBER = Pattern.compile("-?[0-9]+(\\.[0-9]+)?([eE][+-]?[0-9]+)?");
  private static final String CONTINUES = "+-*/%<>=!&|?.[(:";

  private final Path file;
  private final String src;
  private final int[] lineStarts;
  private int pos;

  private Hcl(Path file, String src) {
    this.file = file;
    this.src = src;
    List<Integer> starts = new ArrayList<>(List.of(0));
    for (int i = 0; i < src.length(); i++) {
      if (src.charAt(i) == '\n') {
        starts.add(i + 1);
      }
    }
    this.lineStarts = starts.stream().mapToInt(Integer::intValue).toArray();
  }

  /**
   * Parses {@code text}, read from {@code file} (named in errors only).
   *
   * @throws ConfigException at the first syntax error, with its line
   */
  public static Body parse(Path file, String text) throws ConfigException {
    Hcl p = new Hcl(file, text.startsWith("\uFEFF") ? text.substring(1) : text);
    return p.body(0);
  }

  private Body body(int openedOn) throws ConfigException {
    List<Body.Attribute> attributes = new ArrayList<>();
    List<Body.Block> blocks = new ArrayList<>();
    Map<String, Integer> seen = new LinkedHashMap<>();
    while (true) {
      skipSpaceAndNewlines();
      if (eof()) {
        if (openedOn > 0) {
          throw error(openedOn, "the block opened on this line is not closed: a '}' is missing");
        }
        return new Body(attributes, blocks);
      }
      if (peek() == '}') {
        if (openedOn > 0) {
          return new Body(attributes, blocks);
        }
        throw error(line(pos), "unexpected '}': no block is open here");
      }
      int line = line(pos);
      String name = identifier();
      if (name == null) {
        throw error(line, "expected an attribute name or a block type, found " + describe(pos));
      }
      skipInlineSpace();
      if (peek() == '=' && peekAt(1) != '=') {
        pos++;
        Value value = expression(name);
        Integer first = seen.putIfAbsent(name, line);
        if (first != null) {
          throw error(line, "'" + name + "' is set twice (first on line " + first + "); an attribute is set once");
        }
        attributes.add(new Body.Attribute(name, value, line));
      } else {
        List<String> labels = new ArrayList<>();
        while (!eof() && peek() != '{') {
          if (peek() == '"') {
            Value.Str label = string();
            if (label.interpolated()) {
              throw error(label.line(), "a block label cannot hold a template");
            }
            labels.add(label.text());
          } else {
            String label = identifier();
            if (label == null) {
              throw error(line(pos), "expected '=' after '" + name + "', or labels and '{' for a block, found "
                  + describe(pos));
            }
            labels.add(label);
          }
          skipInlineSpace();
        }
        if (eof()) {
          throw error(line, "expected '=' after '" + name + "', or '{' for a block");
        }
        pos++;
        Body inner = body(line);
        pos++; // the '}' body() stopped at
        blocks.add(new Body.Block(name, labels, inner, line));
      }
      endOfItem(name);
    }
  }

  /** After an attribute or block: a new line, the end, or the '}' of a one-line block. */
  private void endOfItem(String name) throws ConfigException {
    skipInlineSpace();
    if (!eof() && peek() != '\n' && peek() != '}') {
      throw error(line(pos), "expected a new line after '" + name + "', found " + describe(pos));
    }
  }

  private Value expression(String name) throws ConfigException {
    skipInlineSpace();
    if (eof() || peek() == '\n' || peek() == '}' || peek() == ',' || peek() == ']') {
      throw error(line(pos), "'" + name + "' has no value (a value starts on the line of its '=')");
    }
    int start = pos;
    Value v = primary(name);
    if (v != null) {
      int after = pos;
      skipInlineSpaceNoComments();
      boolean more = !eof() && CONTINUES.indexOf(peek()) >= 0 && !startsWith("//") && !startsWith("/*");
      pos = after;
      if (!more) {
        return v;
      }
    }
    pos = start;
    return raw(name);
  }

  /** A literal, or null when the value is an expression to keep as text. */
  private Value primary(String name) throws ConfigException {
    char c = peek();
    if (c == '"') {
      return string();
    }
    if (startsWith("<<") && heredocStart()) {
      return heredoc();
    }
    if (Character.isDigit(c) || (c == '-' && Character.isDigit(peekAt(1)))) {
      Matcher m = NUMBER.matcher(src).region(pos, src.length());
      if (m.lookingAt()) {
        int line = line(pos);
        pos = m.end();
        return new Value.Num(new BigDecimal(m.group()), line);
      }
    }
    if (c == '[') {
      return forExpression() ? null : tuple(name);
    }
    if (c == '{') {
      return forExpression() ? null : object(name);
    }
    int line = line(pos);
    int start = pos;
    String word = identifier();
    if (word != null) {
      switch (word) {
        case "true", "false" -> {
          return new Value.Bool(word.equals("true"), line);
        }
        case "null" -> {
          return new Value.Null(line);
        }
        default -> {
          pos = start;
          return null;
        }
      }
    }
    return null;
  }

  private boolean forExpression() {
    int i = pos + 1;
    while (i < src.length() && Character.isWhitespace(src.charAt(i))) {
      i++;
    }
    return src.startsWith("for", i) && i + 3 < src.length() && Character.isWhitespace(src.charAt(i + 3));
  }

  private Value.Tuple tuple(String name) throws ConfigException {
    int line = line(pos);
    pos++;
    List<Value> items = new ArrayList<>();
    while (true) {
      skipSpaceAndNewlines();
      if (eof()) {
        throw error(line, "the list '" + name + "' opened on this line is not closed: a ']' is missing");
      }
      if (peek() == ']') {
        pos++;
        return new Value.Tuple(items, line);
      }
      items.add(expression(name));
      skipSpaceAndNewlines();
      if (!eof() && peek() == ',') {
        pos++;
      } else if (!eof() && peek() != ']') {
        throw error(line(pos), "expected ',' or ']' in the list '" + name + "', found " + describe(pos));
      }
    }
  }

  private Value.Obj object(String name) throws ConfigException {
    int line = line(pos);
    pos++;
    Map<String, Value> entries = new LinkedHashMap<>();
    while (true) {
      skipSpaceAndNewlines();
      if (eof()) {
        throw error(line, "the object '" + name + "' opened on this line is not closed: a '}' is missing");
      }
      if (peek() == '}') {
        pos++;
        return new Value.Obj(entries, line);
      }
      int keyLine = line(pos);
      String key;
      if (peek() == '"') {
        Value.Str s = string();
        key = s.text();
      } else {
        key = identifier();
        if (key == null) {
          throw error(keyLine, "expected a key in the object '" + name + "', found " + describe(pos));
        }
      }
      skipInlineSpace();
      if (eof() || (peek() != '=' && peek() != ':')) {
        throw error(line(pos), "expected '=' after the key '" + key + "' in the object '" + name + "'");
      }
      pos++;
      Value v = expression(key);
      if (entries.putIfAbsent(key, v) != null) {
        throw error(keyLine, "the key '" + key + "' appears twice in the object '" + name + "'");
      }
      skipInlineSpace();
      if (!eof() && peek() == ',') {
        pos++;
      } else if (!eof() && peek() != '\n' && peek() != '}') {
        throw error(line(pos), "expected ',', a new line or '}' in the object '" + name + "', found " + describe(pos));
      }
    }
  }

  /** An expression kept as text: up to the end of its line, or its list/object/call's ',' or closer. */
  private Value.Expr raw(String name) throws ConfigException {
    int line = line(pos);
    int start = pos;
    int depth = 0;
    while (!eof()) {
      char c = peek();
      boolean lineComment = c == '#' || startsWith("//");
      if (depth == 0 && (c == '\n' || c == ',' || c == '}' || c == ']' || c == ')' || lineComment)) {
        break;
      }
      if (lineComment) {
        while (!eof() && peek() != '\n') {
          pos++;
        }
      } else if (startsWith("/*")) {
        blockComment();
      } else if (c == '"') {
        string();
      } else if (startsWith("<<") && heredocStart()) {
        heredoc();
      } else {
        if (c == '(' || c == '[' || c == '{') {
          depth++;
        } else if (c == ')' || c == ']' || c == '}') {
          depth--;
        }
        pos++;
      }
    }
    String text = src.substring(start, pos).strip();
    if (text.isEmpty()) {
      throw error(line, "'" + name + "' has no value, found " + describe(pos));
    }
    return new Value.Expr(text, line);
  }

  private Value.Str string() throws ConfigException {
    int line = line(pos);
    pos++;
    StringBuilder out = new StringBuilder();
    boolean interpolated = false;
    while (true) {
      if (eof() || peek() == '\n') {
        throw error(line, "a string is not closed on the line it starts: a '\"' is missing");
      }
      char c = src.charAt(pos++);
      if (c == '"') {
        return new Value.Str(out.toString(), interpolated, line);
      }
      if (c == '\\') {
        out.append(escape(line));
      } else if ((c == '$' || c == '%') && peek() == c && peekAt(1) == '{') {
        out.append(c).append('{'); // $${ and %%{ are a literal ${ and %{
        pos += 2;
      } else if ((c == '$' || c == '%') && peek() == '{') {
        interpolated = true;
        int start = pos - 1;
        pos++;
        int depth = 1;
        while (depth > 0) {
          if (eof() || peek() == '\n') {
            throw error(line, "a template's '" + c + "{' is not closed on its line");
          }
          char d = peek();
          if (d == '"') {
            string();
            continue;
          }
          depth += d == '{' ? 1 : d == '}' ? -1 : 0;
          pos++;
        }
        out.append(src, start, pos);
      } else {
        out.append(c);
      }
    }
  }

  private String escape(int line) throws ConfigException {
    if (eof()) {
      throw error(line, "a string ends in a lone '\\'");
    }
    char e = src.charAt(pos++);
    return switch (e) {
      case 'n' -> "\n";
      case 'r' -> "\r";
      case 't' -> "\t";
      case '"' -> "\"";
      case '\\' -> "\\";
      case 'u' -> codePoint(4, line);
      case 'U' -> codePoint(8, line);
      default -> throw error(line, "unknown escape '\\" + e + "' in a string (known: \\n \\r \\t \\\" \\\\ \\uNNNN"
          + " \\UNNNNNNNN)");
    };
  }

  private String codePoint(int digits, int line) throws ConfigException {
    if (pos + digits > src.length() || !src.substring(pos, pos + digits).matches("[0-9A-Fa-f]+")) {
      throw error(line, "'\\u' in a string needs " + digits + " hexadecimal digits");
    }
    int cp = Integer.parseInt(src.substring(pos, pos + digits), 16);
    pos += digits;
    if (!Character.isValidCodePoint(cp)) {
      throw error(line, "'\\U" + Integer.toHexString(cp) + "' is not a Unicode code point");
    }
    return Character.toString(cp);
  }

  private boolean heredocStart() {
    int i = pos + 2;
    if (i < src.length() && src.charAt(i) == '-') {
      i++;
    }
    return i < src.length() && Character.isLetter(src.charAt(i));
  }

  private Value.Str heredoc() throws ConfigException {
    int line = line(pos);
    pos += 2;
    boolean indented = peek() == '-';
    if (indented) {
      pos++;
    }
    String marker = identifier();
    skipInlineSpaceNoComments();
    if (eof() || peek() != '\n') {
      throw error(line, "a heredoc's <<" + marker + " must end its line");
    }
    pos++;
    List<String> lines = new ArrayList<>();
    while (true) {
      if (eof()) {
        throw error(line, "the heredoc <<" + marker + " opened on this line has no closing '" + marker + "' line");
      }
      int end = src.indexOf('\n', pos);
      String text = src.substring(pos, end < 0 ? src.length() : end);
      pos = end < 0 ? src.length() : end;
      if (text.strip().equals(marker)) {
        break;
      }
      pos = end < 0 ? pos : pos + 1;
      lines.add(text);
    }
    if (indented) {
      int indent = lines.stream().filter(l -> !l.isBlank())
          .mapToInt(l -> l.length() - l.stripLeading().length()).min().orElse(0);
      lines.replaceAll(l -> l.length() >= indent ? l.substring(indent) : l.stripLeading());
    }
    StringBuilder out = new StringBuilder();
    lines.forEach(l -> out.append(l).append('\n'));
    String text = out.toString();
    boolean interpolated = text.replace("$${", "").replace("%%{", "").matches("(?s).*[$%]\\{.*");
    return new Value.Str(text, interpolated, line);
  }

  private String identifier() {
    if (eof() || !(Character.isLetter(peek()) || peek() == '_')) {
      return null;
    }
    int start = pos;
    while (!eof() && (Character.isLetterOrDigit(peek()) || peek() == '_' || peek() == '-')) {
      pos++;
    }
    return src.substring(start, pos);
  }

  private void skipSpaceAndNewlines() throws ConfigException {
    while (true) {
      skipInlineSpace();
      if (eof() || peek() != '\n') {
        return;
      }
      pos++;
    }
  }

  /** Spaces, tabs, carriage returns and comments, up to (not over) the next new line. */
  private void skipInlineSpace() throws ConfigException {
    while (!eof()) {
      char c = peek();
      if (c == ' ' || c == '\t' || c == '\r') {
        pos++;
      } else if (c == '#' || startsWith("//")) {
        while (!eof() && peek() != '\n') {
          pos++;
        }
      } else if (startsWith("/*")) {
        blockComment();
      } else {
        return;
      }
    }
  }

  private void skipInlineSpaceNoComments() {
    while (!eof() && (peek() == ' ' || peek() == '\t' || peek() == '\r')) {
      pos++;
    }
  }

  private void blockComment() throws ConfigException {
    int end = src.indexOf("*/", pos + 2);
    if (end < 0) {
      throw error(line(pos), "a '/*' comment is not closed");
    }
    pos = end + 2;
  }

  private boolean eof() {
    return pos >= src.length();
  }

  private char peek() {
    return src.charAt(pos);
  }

  private char peekAt(int ahead) {
    return pos + ahead < src.length() ? src.charAt(pos + ahead) : '\0';
  }

  private boolean startsWith(String s) {
    return src.startsWith(s, pos);
  }

  private String describe(int at) {
    if (at >= src.length()) {
      return "the end of the file";
    }
    if (src.charAt(at) == '\n') {
      return "the end of the line";
    }
    int end = at;
    while (end < src.length() && end - at < 20 && !Character.isWhitespace(src.charAt(end))) {
      end++;
    }
    return "'" + src.substring(at, Math.max(end, at + 1)) + "'";
  }

  private int line(int at) {
    int i = Arrays.binarySearch(lineStarts, at);
    return (i >= 0 ? i : -i - 2) + 1;
  }

  private ConfigException error(int line, String rule) {
    return new ConfigException(file, line, rule);
  }
}
