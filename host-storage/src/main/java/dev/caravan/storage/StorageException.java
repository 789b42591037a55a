package dev.caravan.storage;

/**
 * Base of everything host-storage throws. Unchecked: callers rarely recover locally, they report.
 */
public class StorageException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public StorageException(String message) {
    super(message);
  }

  public StorageException(String message, Throwable cause) {
    super(message, cause);
  }
}
