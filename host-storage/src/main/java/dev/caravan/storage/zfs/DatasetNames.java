package dev.caravan.storage.zfs;

/**
 * Shape checks on dataset names, so that a wrong name fails with a clear message before reaching
 * the kernel (which checks the details: allowed characters, length).
 */
final class DatasetNames {
  /** ZFS_MAX_DATASET_NAME_LEN, including the terminating NUL. */
  private static final int MAX_LENGTH = 255;

  private DatasetNames() {}

  /** A pool name: no slash, no {@code @}. */
  static String requirePool(String pool) {
    requireShape(pool);
    if (pool.contains("/") || pool.contains("@") || pool.contains("#")) {
      throw new IllegalArgumentException("not a pool name: " + pool);
    }
    return pool;
  }

  /** A filesystem or volume, pool root included: {@code pool} or {@code pool/a/b}. */
  static String requireDataset(String dataset) {
    requireShape(dataset);
    if (dataset.contains("@") || dataset.contains("#")) {
      throw new IllegalArgumentException("not a filesystem or volume name: " + dataset);
    }
    return dataset;
  }

  /** A dataset below a pool's root: {@code pool/a}, {@code pool/a/b}. */
  static String requireChild(String dataset) {
    requireDataset(dataset);
    if (!dataset.contains("/")) {
      throw new IllegalArgumentException("a volume needs a name below its pool: " + dataset);
    }
    return dataset;
  }

  /** A snapshot: {@code pool/a@name}. */
  static String requireSnapshot(String snapshot) {
    requireShape(snapshot);
    int at = snapshot.indexOf('@');
    if (at <= 0 || at != snapshot.lastIndexOf('@') || at == snapshot.length() - 1
        || snapshot.indexOf('/', at) >= 0 || snapshot.contains("#")) {
      throw new IllegalArgumentException("not a snapshot name (dataset@name): " + snapshot);
    }
    return snapshot;
  }

  /** A snapshot's short name: what follows the {@code @}. */
  static String requireSnapshotName(String name) {
    requireShape(name);
    if (name.contains("@") || name.contains("/") || name.contains("#")) {
      throw new IllegalArgumentException("not a snapshot short name: " + name);
    }
    return name;
  }

  static String pool(String dataset) {
    int end = dataset.length();
    for (char c : new char[] {'/', '@', '#'}) {
      int i = dataset.indexOf(c);
      if (i >= 0) {
        end = Math.min(end, i);
      }
    }
    return dataset.substring(0, end);
  }

  /** The dataset a snapshot belongs to. */
  static String datasetOf(String snapshot) {
    return snapshot.substring(0, snapshot.indexOf('@'));
  }

  static String shortSnapshotName(String snapshot) {
    return snapshot.substring(snapshot.indexOf('@') + 1);
  }

  /** {@code pool/a/b} for {@code pool/a/b/c}; empty string for a pool. */
  static String parent(String dataset) {
    int slash = dataset.lastIndexOf('/');
    return slash < 0 ? "" : dataset.substring(0, slash);
  }

  private static void requireShape(String name) {
    if (name == null
        || name.isEmpty()
        || name.length() > MAX_LENGTH
        || name.startsWith("/")
        || name.endsWith("/")
        || name.contains("//")
        || name.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
      throw new IllegalArgumentException("not a valid ZFS name: " + name);
    }
  }
}
