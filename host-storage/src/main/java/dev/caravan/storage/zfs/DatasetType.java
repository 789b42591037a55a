package dev.caravan.storage.zfs;

/** What kind of dataset a name refers to. */
public enum DatasetType {
  FILESYSTEM,
  VOLUME,
  SNAPSHOT,
  /** Anything else the kernel may report. */
  OTHER,
}
