package dev.caravan.storage;

import java.nio.file.Path;

/**
 * A path cannot be reached below the directory it must lie in without following a symlink (or
 * something on its way is not a directory): nothing was created, mounted or unmounted there.
 */
public final class PathEscapeException extends StorageException {
  private static final long serialVersionUID = 1L;

  private final Path path;

  public PathEscapeException(Path path, Path root, Throwable cause) {
    super(path + " cannot be reached below " + root + " without following a symlink (or a component on its way is"
        + " not a directory): " + cause.getMessage(), cause);
    this.path = path;
  }

  public Path path() {
    return path;
  }
}
