package dev.caravan.storage.fs;

/** What {@link Filesystems#formatIfEmpty} did. */
public enum FormatOutcome {
  /** The device was empty and now holds a new filesystem. */
  FORMATTED,
  /** The device already held a filesystem of the requested type; it was left untouched. */
  ALREADY_FORMATTED
}
