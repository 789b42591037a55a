package dev.caravan.storage;

/**
 * The JVM refuses host-storage's native calls: it runs with {@code --illegal-native-access=deny}
 * and without {@code --enable-native-access} for host-storage. The message names the flag to add,
 * for host-storage on the module path and on the class path.
 */
public final class NativeAccessDeniedException extends StorageException {
  private static final long serialVersionUID = 1L;

  public NativeAccessDeniedException(String message) {
    super(message);
  }
}
