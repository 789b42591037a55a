package dev.caravan.storage;

/**
 * A C library host-storage needs (libblkid, libzfs_core, ...) is missing or failed to initialise.
 * Only the features that need that library fail; the rest of host-storage works.
 */
public final class NativeLibraryUnavailableException extends StorageException {
  private static final long serialVersionUID = 1L;

  public NativeLibraryUnavailableException(String message) {
    super(message);
  }

  public NativeLibraryUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
