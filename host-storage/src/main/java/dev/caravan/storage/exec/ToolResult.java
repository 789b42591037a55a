package dev.caravan.storage.exec;

import java.time.Duration;
import java.util.List;

/** A helper binary that ran to completion with exit code 0 (anything else is a ToolException). */
public record ToolResult(
    List<String> command, int exitCode, String stdout, String stderr, Duration elapsed) {
  public ToolResult {
    command = List.copyOf(command);
  }
}
