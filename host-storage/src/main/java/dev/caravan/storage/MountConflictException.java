package dev.caravan.storage;

import java.nio.file.Path;

/** Something other than what was asked for is already mounted at the target. */
public final class MountConflictException extends StorageException {
  private static final long serialVersionUID = 1L;

  private final Path target;
  private final String existingSource;

  public MountConflictException(Path target, String existingSource, String detail) {
    super(target + " already has " + existingSource + " mounted: " + detail);
    this.target = target;
    this.existingSource = existingSource;
  }

  public Path target() {
    return target;
  }

  /** The source column of the mount table entry that is in the way. */
  public String existingSource() {
    return existingSource;
  }
}
