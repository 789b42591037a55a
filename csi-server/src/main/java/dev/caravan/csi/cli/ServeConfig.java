package dev.caravan.csi.cli;

import dev.caravan.csi.config.Body;
import dev.caravan.csi.config.ConfigException;
import dev.caravan.csi.config.Value;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.Set;
import java.util.function.Predicate;
import java.util.regex.Pattern;

/**
 * A config file applied to a command's {@link Flags}: every flag {@code --some-flag} is the key
 * {@code some_flag} (a list for a repeatable flag), so a flag added to the command has its key with no
 * change here. A flag on the command line, or
 * the environment variable an option reads, wins over the file. Blocks named after a backend hold
 * that backend's options ({@code qnap { url = ... }}).
 *
 * <p>Secrets are never values in the file: a key that names one ({@code password}, {@code token},
 * ...) is refused, naming the file-based way ({@code *_file} keys, the backend's
 * {@code credentials_file}).
 */
final class ServeConfig {
  /** Keys that would hold a secret itself rather than the file it is in. */
  private static final Pattern SECRET = Pattern.compile("(.*_)?(password|passphrase|token|secret|private_key|key_pem)");

  private final Path file;
  private final Map<String, Integer> lines = new LinkedHashMap<>();
  private final Map<String, Integer> backendLines = new LinkedHashMap<>();
  private final Map<String, String> backendOptions = new LinkedHashMap<>();

  private ServeConfig(Path file) {
    this.file = file;
  }

  /**
   * Checks every key and value of {@code body} against {@code flags} and the backend blocks, and sets
   * on {@code target} each flag the command line and the environment left unset.
   *
   * @param given the flags the command line gave (they win over the file)
   * @param fromEnvironment flags whose value the environment gave (they win over the file)
   * @throws ConfigException for an unknown key, a bad value or a secret, with its line and the rule
   */
  static <T> ServeConfig apply(Path file, Body body, Flags<T> flags, T target, Set<String> given,
      Collection<String> backends, Predicate<String> fromEnvironment) throws ConfigException {
    ServeConfig c = new ServeConfig(file);
    Map<String, Flag<T>> byKey = keys(flags);
    for (Body.Attribute a : body.attributes()) {
      c.secret(a.name(), a.name(), a.line());
      Flag<T> flag = byKey.get(a.name());
      if (flag == null) {
        throw c.error(a.line(), unknown(a.name(), byKey.keySet(), backends));
      }
      List<Object> values = new ArrayList<>();
      try {
        for (String v : c.values(a, flag)) {
          values.add(flag.convert(v));
        }
      } catch (FlagException e) {
        throw c.error(a.line(), a.name() + ": " + e.getMessage());
      }
      if (!given.contains(flag.name()) && !fromEnvironment.test(flag.name())) {
        flag.apply(target, values);
        c.lines.put(flag.name(), a.line());
      }
    }
    Map<String, Integer> seen = new LinkedHashMap<>();
    for (Body.Block b : body.blocks()) {
      if (!backends.contains(b.type())) {
        throw c.error(b.line(), "unknown block '" + b.type() + "'; blocks are the backends' settings: "
            + String.join(", ", backends));
      }
      if (!b.labels().isEmpty()) {
        throw c.error(b.line(), "the " + b.type() + " block takes no label: " + b.type() + " { ... }");
      }
      Integer first = seen.putIfAbsent(b.type(), b.line());
      if (first != null) {
        throw c.error(b.line(), "a second " + b.type() + " block (the first is on line " + first + ")");
      }
      if (!b.body().blocks().isEmpty()) {
        Body.Block inner = b.body().blocks().getFirst();
        throw c.error(inner.line(), "the " + b.type() + " block holds settings (key = value), not the block '"
            + inner.type() + "'");
      }
    }
    return c;
  }

  /**
   * The options of {@code driver}'s block, keys as the backend names them ({@code ca_file} becomes
   * {@code ca-file}), lists joined with commas.
   */
  ServeConfig backend(Body body, String driver) throws ConfigException {
    for (Body.Block b : body.blocks(driver)) {
      for (Body.Attribute a : b.body().attributes()) {
        String key = driver + "." + a.name();
        if (a.name().contains("-")) {
          throw error(a.line(), key + ": keys are written with '_': " + a.name().replace('-', '_'));
        }
        secret(a.name(), key, a.line());
        List<String> values = new ArrayList<>();
        if (a.value() instanceof Value.Tuple t) {
          for (Value v : t.items()) {
            values.add(scalar(key, v));
          }
        } else {
          values.add(scalar(key, a.value()));
        }
        String option = a.name().replace('_', '-');
        backendOptions.put(option, String.join(",", values));
        backendLines.put(driver + "." + option, a.line());
      }
    }
    return this;
  }

  Map<String, String> backendOptions() {
    return Map.copyOf(backendOptions);
  }

  /** {@code file:line: } for an option the file set, else empty. */
  String where(String option) {
    return Optional.ofNullable(lines.get(option)).map(l -> file + ":" + l + ": ").orElse("");
  }

  /** {@code file:line: } for the first backend key {@code message} names, else empty. */
  String whereBackend(String message) {
    return backendLines.entrySet().stream()
        .filter(e -> Pattern.compile(Pattern.quote(e.getKey()) + "\\b").matcher(message).find())
        .map(e -> file + ":" + e.getValue() + ": ").findFirst().orElse("");
  }

  /** The config key of each flag: its name without the dashes in front, the others as underscores. */
  static <T> Map<String, Flag<T>> keys(Flags<T> flags) {
    Map<String, Flag<T>> keys = new TreeMap<>();
    for (Flag<T> f : flags.all()) {
      if (!f.name().equals("--config")) {
        keys.put(key(f.name()), f);
      }
    }
    return keys;
  }

  static String key(String flag) {
    return flag.replaceFirst("^-+", "").replace('-', '_');
  }

  private List<String> values(Body.Attribute a, Flag<?> flag) throws ConfigException {
    List<String> values = new ArrayList<>();
    if (a.value() instanceof Value.Tuple t) {
      if (!flag.repeatable()) {
        throw error(a.line(), a.name() + " takes one value, not a list");
      }
      for (Value v : t.items()) {
        values.add(scalar(a.name(), v));
      }
    } else {
      values.add(scalar(a.name(), a.value()));
    }
    return values;
  }

  private String scalar(String key, Value v) throws ConfigException {
    return switch (v) {
      case Value.Str s when !s.interpolated() -> s.text();
      case Value.Num n -> n.value().stripTrailingZeros().toPlainString();
      case Value.Bool b -> Boolean.toString(b.value());
      default -> throw error(v.line(), key + " must be a string, number or boolean written out, not " + v.kind()
          + (v instanceof Value.Str || v instanceof Value.Expr ? " (a config file is not evaluated)" : ""));
    };
  }

  private void secret(String name, String key, int line) throws ConfigException {
    if (SECRET.matcher(name).matches() && !name.endsWith("_secret")) {
      throw error(line, key + ": a secret is never written in the config; keep it in a file readable by root"
          + " only and name the file (http_token_file, http_tls_key, qnap's credentials_file)");
    }
  }

  private static String unknown(String name, Collection<String> keys, Collection<String> backends) {
    String hint = keys.stream().filter(k -> close(k, name)).findFirst().map(k -> " (did you mean " + k + "?)")
        .orElse("");
    if (backends.contains(name)) {
      hint = " (" + name + " is a block: " + name + " { ... })";
    }
    return "unknown key '" + name + "'" + hint + "; keys are the flags of `caravan serve --help` written with '_'"
        + " (" + String.join(", ", keys) + ") and the blocks " + String.join(", ", backends);
  }

  /** The same key but for dashes, a plural or a typo of a letter or two (flags ask it too). */
  static boolean close(String key, String name) {
    String a = key.replace("-", "_");
    String b = name.replace("-", "_");
    if (a.equals(b) || (a + "s").equals(b) || a.equals(b.replaceFirst("_seconds$", ""))) {
      return true;
    }
    int[] prev = new int[b.length() + 1];
    for (int j = 0; j <= b.length(); j++) {
      prev[j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      int[] cur = new int[b.length() + 1];
      cur[0] = i;
      for (int j = 1; j <= b.length(); j++) {
        cur[j] = Math.min(Math.min(cur[j - 1], prev[j]) + 1, prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1));
      }
      prev = cur;
    }
    return prev[b.length()] <= 2;
  }

  private ConfigException error(int line, String rule) {
    return new ConfigException(file, line, rule);
  }
}
