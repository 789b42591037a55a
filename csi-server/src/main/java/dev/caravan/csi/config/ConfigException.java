package dev.caravan.csi.config;

import java.nio.file.Path;

/** A configuration file that breaks a rule: where (file and line) and which rule. */
public final class ConfigException extends Exception {
  private static final long serialVersionUID = 1L;

  private final transient Path file;
  private final int line;
  private final String rule;

  public ConfigException(Path file, int line, String rule) {
    super(file + (line > 0 ? ":" + line : "") + ": " + rule);
    this.file = file;
    this.line = line;
    this.rule = rule;
  }

  public Path file() {
    return file;
  }

  /** 1-based; 0 when the rule is about the whole file. */
  public int line() {
    return line;
  }

  public String rule() {
    return rule;
  }
}
