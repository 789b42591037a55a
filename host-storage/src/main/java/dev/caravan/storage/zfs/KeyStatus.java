package dev.caravan.storage.zfs;

/** The {@code keystatus} property of a dataset: whether its encryption key is loaded. */
public enum KeyStatus {
  /** Not encrypted: there is no key. */
  NONE,
  /** Encrypted, and the key is not loaded: the data cannot be read, a volume has no device. */
  UNAVAILABLE,
  /** Encrypted, and the key is loaded. */
  AVAILABLE;

  /** The kernel's {@code zfs_keystatus_t} value. */
  static KeyStatus fromIndex(long index) {
    return switch ((int) index) {
      case 1 -> UNAVAILABLE;
      case 2 -> AVAILABLE;
      default -> NONE;
    };
  }

  /** The word {@code zfs get keystatus} prints. */
  public String word() {
    return switch (this) {
      case NONE -> "none";
      case UNAVAILABLE -> "unavailable";
      case AVAILABLE -> "available";
    };
  }
}
