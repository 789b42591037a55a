package dev.caravan.storage.block;

import dev.caravan.storage.StorageException;
import java.nio.file.Path;

/** A destructive step was refused because the kernel shows the device in use ({@link DeviceUse}). */
public final class DeviceInUseException extends StorageException {
  private static final long serialVersionUID = 1L;

  private final transient DeviceUse use;

  public DeviceInUseException(String step, DeviceUse use) {
    super("not " + step + ": " + use.describe());
    this.use = use;
  }

  /** What holds the device. */
  public DeviceUse use() {
    return use;
  }

  /**
   * Throws unless nothing uses {@code device}: the check every destructive step makes first.
   *
   * @param step what would have been done, in words ({@code "detaching /dev/loop3"})
   */
  public static void requireUnused(Path device, String step) {
    DeviceUse use = DeviceUse.of(device);
    if (use.inUse()) {
      throw new DeviceInUseException(step, use);
    }
  }
}
