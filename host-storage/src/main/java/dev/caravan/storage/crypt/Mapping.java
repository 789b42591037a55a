package dev.caravan.storage.crypt;

import java.nio.file.Path;
import java.util.Objects;
import java.util.Optional;

/**
 * A crypt mapping's state as device-mapper reports it.
 *
 * @param name the mapping's name
 * @param open whether the mapping exists
 * @param inUse whether it exists and is held open (mounted, or opened by a program)
 * @param device the block device its data lives on, when open
 * @param sizeBytes the mapping's size, 0 when not open
 * @param offsetBytes where on the device its data starts (after the LUKS2 header), 0 when not open
 */
public record Mapping(
    String name, boolean open, boolean inUse, Optional<Path> device, long sizeBytes, long offsetBytes) {
  public Mapping {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(device, "device");
  }

  /** The mapping's device node, {@code /dev/mapper/<name>}. */
  public Path path() {
    return Luks2.MAPPER_DIR.resolve(name);
  }
}
