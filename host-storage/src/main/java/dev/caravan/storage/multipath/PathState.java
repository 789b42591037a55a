package dev.caravan.storage.multipath;

import java.util.Locale;

/** Whether device-mapper sends I/O down a path (multipathd's {@code dm_st}). */
public enum PathState {
  /** The path is in use. */
  ACTIVE,
  /** The kernel failed the path; I/O goes to the others until the checker reinstates it. */
  FAILED,
  /** multipathd does not know, or the path belongs to no map. */
  UNKNOWN;

  static PathState parse(String dmState) {
    return switch (dmState.strip().toLowerCase(Locale.ROOT)) {
      case "active" -> ACTIVE;
      case "failed" -> FAILED;
      default -> UNKNOWN;
    };
  }
}
