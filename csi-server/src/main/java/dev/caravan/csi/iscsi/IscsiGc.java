package dev.caravan.csi.iscsi;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * The leaked-session sweeper's settings ({@code caravan serve --iscsi-gc=on|off},
 * {@code --iscsi-gc-interval-seconds}, {@code --iscsi-gc-grace-seconds}, or their keys in
 * {@code --config}). Only the qnap driver has iSCSI sessions; the other drivers ignore these.
 *
 * @param interval how often it sweeps
 * @param grace how long a session must have been seen unused, by two sweeps at least this far
 *     apart, before it is logged out
 */
public record IscsiGc(boolean enabled, Duration interval, Duration grace) {
  /** On, sweeping every minute, logging out after five minutes unused. */
  public static final IscsiGc DEFAULT = new IscsiGc(true, Duration.ofMinutes(1), Duration.ofMinutes(5));
  public static final IscsiGc OFF = new IscsiGc(false, DEFAULT.interval(), DEFAULT.grace());

  public IscsiGc {
    if (interval.isNegative() || interval.isZero() || grace.isNegative() || grace.isZero()) {
      throw new IllegalArgumentException("the iscsi-gc interval and grace must be positive");
    }
  }

  /**
   * The settings from the flag's value ({@code on} or {@code off}; null when not given, then the
   * config file's {@code iscsi-gc}) and the config file's keys.
   *
   * @throws IllegalArgumentException naming the key and the values it takes
   */
  public static IscsiGc parse(String flag, Map<String, String> config) {
    String value = Optional.ofNullable(flag).orElse(config.getOrDefault("iscsi-gc", "on"));
    boolean enabled = switch (value) {
      case "on" -> true;
      case "off" -> false;
      default -> throw new IllegalArgumentException("--iscsi-gc '" + value + "' must be on or off");
    };
    return new IscsiGc(enabled,
        Duration.ofSeconds(seconds(config, "iscsi-gc-interval-seconds", DEFAULT.interval().toSeconds(), 10, 3600)),
        Duration.ofSeconds(seconds(config, "iscsi-gc-grace-seconds", DEFAULT.grace().toSeconds(), 60, 86_400)));
  }

  private static long seconds(Map<String, String> config, String key, long dflt, long min, long max) {
    String v = config.get(key);
    if (v == null || v.isBlank()) {
      return dflt;
    }
    try {
      long n = Long.parseLong(v.strip());
      if (n >= min && n <= max) {
        return n;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new IllegalArgumentException(key + " '" + v + "' must be a whole number of seconds from " + min + " to " + max);
  }
}
