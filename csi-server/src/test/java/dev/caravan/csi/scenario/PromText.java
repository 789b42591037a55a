package dev.caravan.csi.scenario;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A strict parser of the Prometheus text exposition format 0.0.4, for checking /metrics: every line
 * must be a HELP, TYPE, comment or sample line; metric and label names must be valid; label values
 * must use only the format's escapes; each sample must belong to a family whose TYPE came first;
 * no family may be declared twice and no series may repeat.
 */
final class PromText {
  private static final Pattern NAME = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*");
  private static final Pattern LABEL = Pattern.compile("[a-zA-Z_][a-zA-Z0-9_]*");
  private static final Pattern TYPES = Pattern.compile("counter|gauge|histogram|summary|untyped");

  record Sample(String name, Map<String, String> labels, double value) {}

  final Map<String, String> types = new LinkedHashMap<>();
  final List<Sample> samples = new ArrayList<>();

  static PromText parse(String text) {
    PromText p = new PromText();
    if (!text.isEmpty() && !text.endsWith("\n")) {
      throw new AssertionError("exposition must end with a newline");
    }
    Map<String, Boolean> seen = new HashMap<>();
    int lineNo = 0;
    for (String line : text.split("\n", -1)) {
      lineNo++;
      if (line.isEmpty()) {
        continue;
      }
      String where = "line " + lineNo + ": " + line;
      if (line.startsWith("# HELP ")) {
        String rest = line.substring(7);
        int sp = rest.indexOf(' ');
        require(NAME.matcher(sp < 0 ? rest : rest.substring(0, sp)).matches(), "bad HELP name", where);
      } else if (line.startsWith("# TYPE ")) {
        String[] parts = line.substring(7).split(" ", -1);
        require(parts.length == 2 && NAME.matcher(parts[0]).matches() && TYPES.matcher(parts[1]).matches(), "bad TYPE", where);
        require(p.types.put(parts[0], parts[1]) == null, "family declared twice", where);
      } else if (!line.startsWith("#")) {
        Sample s = sample(line, where);
        require(p.family(s.name()).isPresent(), "sample before its TYPE", where);
        require(seen.put(s.name() + s.labels(), true) == null, "duplicate series", where);
        p.samples.add(s);
      }
    }
    return p;
  }

  /** The declared family a sample name belongs to (histogram/counter suffixes removed). */
  Optional<String> family(String sample) {
    if (types.containsKey(sample)) {
      return Optional.of(sample);
    }
    for (String suffix : new String[] {"_bucket", "_count", "_sum", "_total", "_created"}) {
      if (sample.endsWith(suffix)) {
        String base = sample.substring(0, sample.length() - suffix.length());
        if (types.containsKey(base)) {
          return Optional.of(base);
        }
      }
    }
    return Optional.empty();
  }

  private static Sample sample(String line, String where) {
    Matcher m = NAME.matcher(line);
    require(m.lookingAt(), "bad metric name", where);
    String name = m.group();
    int i = m.end();
    Map<String, String> labels = new LinkedHashMap<>();
    if (i < line.length() && line.charAt(i) == '{') {
      i++;
      while (line.charAt(i) != '}') {
        Matcher l = LABEL.matcher(line).region(i, line.length());
        require(l.lookingAt(), "bad label name", where);
        String label = l.group();
        i = l.end();
        require(line.startsWith("=\"", i), "expected =\"", where);
        i += 2;
        StringBuilder v = new StringBuilder();
        while (line.charAt(i) != '"') {
          char c = line.charAt(i++);
          if (c == '\\') {
            char e = line.charAt(i++);
            switch (e) {
              case '\\' -> v.append('\\');
              case '"' -> v.append('"');
              case 'n' -> v.append('\n');
              default -> throw new AssertionError("bad escape \\" + e + " in " + where);
            }
          } else {
            v.append(c);
          }
        }
        i++;
        require(labels.put(label, v.toString()) == null, "label repeated", where);
        if (line.charAt(i) == ',') {
          i++;
        } else {
          require(line.charAt(i) == '}', "expected , or }", where);
        }
      }
      i++;
    }
    require(i < line.length() && line.charAt(i) == ' ', "expected a space before the value", where);
    String[] rest = line.substring(i + 1).split(" ", -1);
    require(rest.length == 1 || rest.length == 2, "expected value [timestamp]", where);
    double value = switch (rest[0]) {
      case "+Inf" -> Double.POSITIVE_INFINITY;
      case "-Inf" -> Double.NEGATIVE_INFINITY;
      case "NaN" -> Double.NaN;
      default -> {
        try {
          yield Double.parseDouble(rest[0]);
        } catch (NumberFormatException e) {
          throw new AssertionError("bad value in " + where, e);
        }
      }
    };
    if (rest.length == 2) {
      try {
        Long.parseLong(rest[1]);
      } catch (NumberFormatException e) {
        throw new AssertionError("bad timestamp in " + where, e);
      }
    }
    return new Sample(name, labels, value);
  }

  private static void require(boolean ok, String what, String where) {
    if (!ok) {
      throw new AssertionError(what + " at " + where);
    }
  }

  /** The value of the one series with this name and (at least) these labels; fails if none or several. */
  double value(String name, String... labelPairs) {
    List<Sample> matches = find(name, labelPairs);
    if (matches.size() != 1) {
      throw new AssertionError("expected one series " + name + java.util.Arrays.toString(labelPairs) + ", found "
          + matches);
    }
    return matches.get(0).value();
  }

  /** Like {@link #value} but 0 when the series is absent. */
  double valueOrZero(String name, String... labelPairs) {
    List<Sample> matches = find(name, labelPairs);
    return matches.isEmpty() ? 0 : value(name, labelPairs);
  }

  List<Sample> find(String name, String... labelPairs) {
    List<Sample> out = new ArrayList<>();
    for (Sample s : samples) {
      if (!s.name().equals(name)) {
        continue;
      }
      boolean ok = true;
      for (int i = 0; i < labelPairs.length; i += 2) {
        ok &= labelPairs[i + 1].equals(s.labels().get(labelPairs[i]));
      }
      if (ok) {
        out.add(s);
      }
    }
    return out;
  }
}
