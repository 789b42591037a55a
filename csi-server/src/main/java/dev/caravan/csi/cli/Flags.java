package dev.caravan.csi.cli;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A command's flags, parsed without picocli: {@code caravan serve} starts on every node restart, and
 * building picocli's reflective model of its options was the largest piece of the time from exec to
 * the first Probe (picocli's classes are Java 5 class files, which the JVM's AOT cache cannot hold).
 * The table is the one definition: parsing, {@code --help} and the config file's keys come from it.
 *
 * <p>Accepted: {@code --name=VALUE} and {@code --name VALUE}; {@code --help}/{@code -h} and
 * {@code --version}/{@code -V}. A flag given twice that is not repeatable, an unknown flag, a value
 * missing or of the wrong kind, and any positional argument are refused naming the flag and the rule.
 *
 * @param <T> the command object the values are set on
 */
final class Flags<T> {
  /** What a command line asked for. */
  record Parsed(Set<String> given, boolean help, boolean version) {}

  private final String command;
  private final String summary;
  private final Map<String, Flag<T>> byName = new LinkedHashMap<>();

  Flags(String command, String summary, List<Flag<T>> flags) {
    this.command = command;
    this.summary = summary;
    for (Flag<T> f : flags) {
      if (byName.put(f.name(), f) != null) {
        throw new IllegalArgumentException("two flags named " + f.name());
      }
    }
  }

  List<Flag<T>> all() {
    return List.copyOf(byName.values());
  }

  Optional<Flag<T>> find(String name) {
    return Optional.ofNullable(byName.get(name));
  }

  /**
   * Sets on {@code target} every flag {@code args} gives.
   *
   * @return the names of the flags given, and whether help or the version was asked for (then nothing
   *     else is checked or set)
   * @throws FlagException naming the flag and the rule it breaks
   */
  Parsed parse(T target, String... args) {
    Map<Flag<T>, List<Object>> values = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      switch (arg) {
        case "--help", "-h" -> {
          return new Parsed(Set.of(), true, false);
        }
        case "--version", "-V" -> {
          return new Parsed(Set.of(), false, true);
        }
        default -> { }
      }
      if (!arg.startsWith("--") || arg.equals("--")) {
        throw new FlagException("unexpected argument '" + arg + "': " + command + " takes only --flags");
      }
      int eq = arg.indexOf('=');
      String name = eq < 0 ? arg : arg.substring(0, eq);
      Flag<T> flag = byName.get(name);
      if (flag == null) {
        throw new FlagException("unknown flag '" + name + "'" + suggestion(name) + "; see " + command + " --help");
      }
      String raw;
      if (eq >= 0) {
        raw = arg.substring(eq + 1);
      } else if (i + 1 < args.length) {
        raw = args[++i];
      } else {
        throw new FlagException(name + " needs a value: " + name + "=" + flag.label());
      }
      List<Object> list = values.computeIfAbsent(flag, f -> new ArrayList<>());
      if (!list.isEmpty() && !flag.repeatable()) {
        throw new FlagException(name + " is given twice; it takes one value");
      }
      list.add(flag.convert(raw));
    }
    Set<String> given = new LinkedHashSet<>();
    values.forEach((flag, v) -> {
      flag.apply(target, v);
      given.add(flag.name());
    });
    return new Parsed(Collections.unmodifiableSet(given), false, false);
  }

  /** {@code --help}: the summary, then each flag with its value's label and its help, wrapped. */
  String usage() {
    StringBuilder out = new StringBuilder("Usage: ").append(command).append(" [--flag=VALUE]...\n")
        .append(summary).append('\n');
    for (Flag<T> f : byName.values()) {
      out.append("  ").append(f.name()).append('=').append(f.label()).append(f.repeatable() ? " (repeatable)" : "")
          .append('\n');
      wrap(out, f.help(), "      ", 100);
    }
    out.append("  -h, --help\n      Show this help and exit.\n  -V, --version\n      Print the version and exit.\n");
    return out.toString();
  }

  private static void wrap(StringBuilder out, String text, String indent, int width) {
    int column = 0;
    for (String word : text.strip().split(" +", -1)) {
      if (column > 0 && column + 1 + word.length() > width) {
        out.append('\n');
        column = 0;
      }
      if (column == 0) {
        out.append(indent).append(word);
        column = indent.length() + word.length();
      } else {
        out.append(' ').append(word);
        column += 1 + word.length();
      }
    }
    out.append('\n');
  }

  private String suggestion(String name) {
    return byName.keySet().stream().filter(n -> ServeConfig.close(n, name)).findFirst()
        .map(n -> " (did you mean " + n + "?)").orElse("");
  }
}
