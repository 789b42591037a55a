package dev.caravan.storage.zfs;

/** Where a property's value comes from, as {@code zfs get} reports it in its SOURCE column. */
public enum PropertySource {
  /** Set on this dataset. */
  LOCAL,
  /** Set on an ancestor; {@link Property#setOn()} names it. */
  INHERITED,
  /** Set by {@code zfs receive}. */
  RECEIVED,
  /** The built-in default. */
  DEFAULT,
  /** A statistic or read-only value, such as {@code used}, {@code available} or {@code volsize}. */
  NONE,
}
