package dev.caravan.storage;

import java.util.List;

/**
 * A helper binary (mkfs.ext4, xfs_growfs, ...) failed. {@link #exitCode()} is -1 when the process
 * never exited on its own: it timed out and was killed, or it could not be started at all.
 */
public final class ToolException extends StorageException {
  private static final long serialVersionUID = 1L;

  private final List<String> command;
  private final int exitCode;
  private final String stderr;

  public ToolException(String message, List<String> command, int exitCode, String stderr) {
    this(message, command, exitCode, stderr, null);
  }

  public ToolException(
      String message, List<String> command, int exitCode, String stderr, Throwable cause) {
    super(
        String.join(" ", command)
            + ": "
            + message
            + (stderr.isBlank() ? "" : ": " + stderr.strip()),
        cause);
    this.command = List.copyOf(command);
    this.exitCode = exitCode;
    this.stderr = stderr;
  }

  public List<String> command() {
    return command;
  }

  public int exitCode() {
    return exitCode;
  }

  public String stderr() {
    return stderr;
  }
}
