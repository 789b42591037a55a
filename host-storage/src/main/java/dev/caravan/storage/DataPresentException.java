package dev.caravan.storage;

import java.nio.file.Path;

/** Refused to format a device because it already holds something: we never format over data. */
public final class DataPresentException extends StorageException {
  private static final long serialVersionUID = 1L;

  private final Path device;
  private final String found;

  public DataPresentException(Path device, String found) {
    super("refusing to format " + device + ": it holds " + found);
    this.device = device;
    this.found = found;
  }

  public Path device() {
    return device;
  }

  /** What the probe found, like {@code "xfs filesystem"} or {@code "dos partition table"}. */
  public String found() {
    return found;
  }
}
