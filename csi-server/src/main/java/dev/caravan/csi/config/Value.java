package dev.caravan.csi.config;

import java.math.BigDecimal;
import java.util.List;
import java.util.Map;

/** A value in a configuration file, with the line it starts on. */
public sealed interface Value {
  int line();

  /** What the value is, for messages: "a string", "a list", ... */
  String kind();

  /** A string; {@code interpolated} when it holds a {@code ${...}} or {@code %{...}} template, kept verbatim. */
  record Str(String text, boolean interpolated, int line) implements Value {
    @Override
    public String kind() {
      return interpolated ? "a template" : "a string";
    }
  }

  record Num(BigDecimal value, int line) implements Value {
    @Override
    public String kind() {
      return "a number";
    }
  }

  record Bool(boolean value, int line) implements Value {
    @Override
    public String kind() {
      return "a boolean";
    }
  }

  record Null(int line) implements Value {
    @Override
    public String kind() {
      return "null";
    }
  }

  record Tuple(List<Value> items, int line) implements Value {
    public Tuple {
      items = List.copyOf(items);
    }

    @Override
    public String kind() {
      return "a list";
    }
  }

  /** An object; keys in file order. */
  record Obj(Map<String, Value> entries, int line) implements Value {
    public Obj {
      entries = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(entries));
    }

    @Override
    public String kind() {
      return "an object";
    }
  }

  /**
   * Anything that is not a literal (a reference such as {@code var.x}, a function call, an
   * operation), kept as its source text: Nomad evaluates these in a jobspec; a Caravan config
   * refuses them.
   */
  record Expr(String source, int line) implements Value {
    @Override
    public String kind() {
      return "an expression";
    }
  }
}
