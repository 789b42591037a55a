package dev.caravan.csi.cli;

import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;

/**
 * One {@code --name=VALUE} option of a command that {@link Flags} parses: its name, the label its
 * help shows for the value, its help text, the kind of value, whether it may be given more than once,
 * and where a parsed value goes. Every flag takes exactly one value per occurrence.
 *
 * @param <T> the command object the values are set on
 */
final class Flag<T> {
  /** What a flag's value is: a converter from the text given, and the rule a bad value breaks. */
  enum Kind {
    TEXT,
    PATH,
    NUMBER,
    BOOLEAN;

    Object convert(String flag, String raw) {
      return switch (this) {
        case TEXT -> raw;
        case PATH -> {
          try {
            yield Path.of(raw);
          } catch (InvalidPathException e) {
            throw new FlagException(flag + ": '" + raw + "' is not a path (" + e.getReason() + ")");
          }
        }
        case NUMBER -> {
          try {
            yield Long.parseLong(raw.strip());
          } catch (NumberFormatException e) {
            throw new FlagException(flag + ": '" + raw + "' is not a whole number");
          }
        }
        case BOOLEAN -> switch (raw.strip().toLowerCase(java.util.Locale.ROOT)) {
          case "true" -> true;
          case "false" -> false;
          default -> throw new FlagException(flag + ": '" + raw + "' is not true or false");
        };
      };
    }
  }

  private final String name;
  private final String label;
  private final String help;
  private final Kind kind;
  private final boolean repeatable;
  private final BiConsumer<T, List<Object>> apply;

  private Flag(String name, String label, String help, Kind kind, boolean repeatable, BiConsumer<T, List<Object>> apply) {
    this.name = name;
    this.label = label;
    this.help = help;
    this.kind = kind;
    this.repeatable = repeatable;
    this.apply = apply;
  }

  static <T> Flag<T> text(String name, String label, String help, BiConsumer<T, String> set) {
    return new Flag<>(name, label, help, Kind.TEXT, false, (t, v) -> set.accept(t, (String) v.getFirst()));
  }

  static <T> Flag<T> path(String name, String label, String help, BiConsumer<T, Path> set) {
    return new Flag<>(name, label, help, Kind.PATH, false, (t, v) -> set.accept(t, (Path) v.getFirst()));
  }

  static <T> Flag<T> number(String name, String label, String help, BiConsumer<T, Long> set) {
    return new Flag<>(name, label, help, Kind.NUMBER, false, (t, v) -> set.accept(t, (Long) v.getFirst()));
  }

  static <T> Flag<T> bool(String name, String help, BiConsumer<T, Boolean> set) {
    return new Flag<>(name, "true|false", help, Kind.BOOLEAN, false, (t, v) -> set.accept(t, (Boolean) v.getFirst()));
  }

  /** A repeatable flag: every occurrence adds one text to the list. */
  static <T> Flag<T> texts(String name, String label, String help, BiConsumer<T, List<String>> set) {
    return new Flag<>(name, label, help, Kind.TEXT, true,
        (t, v) -> set.accept(t, new ArrayList<>(v.stream().map(String.class::cast).toList())));
  }

  /** A repeatable flag: every occurrence adds one path to the list. */
  static <T> Flag<T> paths(String name, String label, String help, BiConsumer<T, List<Path>> set) {
    return new Flag<>(name, label, help, Kind.PATH, true,
        (t, v) -> set.accept(t, new ArrayList<>(v.stream().map(Path.class::cast).toList())));
  }

  String name() {
    return name;
  }

  String label() {
    return label;
  }

  String help() {
    return help;
  }

  Kind kind() {
    return kind;
  }

  boolean repeatable() {
    return repeatable;
  }

  /** The value {@code raw} stands for; a {@link FlagException} naming the flag and the rule when it is none. */
  Object convert(String raw) {
    return kind.convert(name, raw);
  }

  /** Sets the converted {@code values} on {@code target}: a repeatable flag's list replaces the one there. */
  void apply(T target, List<Object> values) {
    apply.accept(target, values);
  }
}
