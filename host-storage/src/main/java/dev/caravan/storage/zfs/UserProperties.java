package dev.caravan.storage.zfs;

import java.util.Map;

/** Checks for ZFS user property names and values, shared by the specs. */
final class UserProperties {
  /** ZFS_MAXPROPLEN: longer names are refused by the kernel. */
  private static final int MAX_NAME = 256;

  /** ZFS_MAXPROPLEN for user property values. */
  private static final int MAX_VALUE = 8192;

  private UserProperties() {}

  /**
   * A user property name as ZFS accepts it: contains a colon, only {@code [a-z0-9:._-]}, at most
   * 256 characters. Lower case is required so that names compare the same everywhere.
   */
  static void requireUserPropertyName(String name) {
    if (name.isEmpty()
        || name.length() > MAX_NAME
        || name.indexOf(':') < 0
        || !name.chars().allMatch(UserProperties::allowedInName)) {
      throw new IllegalArgumentException(
          "not a ZFS user property name (module:name, characters [a-z0-9:._-]): " + name);
    }
  }

  static Map<String, String> checked(Map<String, String> properties, ManagedBy marker) {
    properties.forEach(
        (name, value) -> {
          requireUserPropertyName(name);
          if (value == null || value.length() > MAX_VALUE || value.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("bad value for user property " + name);
          }
          if (marker != null && name.equals(marker.property())) {
            throw new IllegalArgumentException(
                name + " is the ownership marker: the facade sets it itself");
          }
        });
    return Map.copyOf(properties);
  }

  private static boolean allowedInName(int c) {
    return (c >= 'a' && c <= 'z')
        || (c >= '0' && c <= '9')
        || c == ':'
        || c == '.'
        || c == '_'
        || c == '-';
  }
}
