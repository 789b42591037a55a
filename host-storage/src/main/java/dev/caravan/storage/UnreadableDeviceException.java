package dev.caravan.storage;

import java.nio.file.Path;

/**
 * Refused to format a device because the region where signatures live cannot be read: what it holds
 * is unknown, and an unknown device is never formatted.
 */
public final class UnreadableDeviceException extends StorageException {
  private static final long serialVersionUID = 1L;

  private final Path device;
  private final String reason;

  /**
   * @param what the part that cannot be read, like {@code "its first MiB"}
   * @param cause the failed or short read
   */
  public UnreadableDeviceException(Path device, String what, Throwable cause) {
    super("refusing to format " + device + ": " + reason(what, cause), cause);
    this.device = device;
    this.reason = reason(what, cause);
  }

  private static String reason(String what, Throwable cause) {
    return what + " cannot be read (" + cause.getMessage() + "), so what it holds is unknown";
  }

  public Path device() {
    return device;
  }

  /** Which part cannot be read and why, like {@code "its first MiB cannot be read (...), so ..."}. */
  public String reason() {
    return reason;
  }
}
