package dev.caravan.csi.backend.local;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Pattern;

/**
 * The {@code local} backend's settings, from {@code local.*} keys of {@code caravan serve --config}
 * (the {@link dev.caravan.csi.backend.BackendConfig#options()} map, prefix removed):
 *
 * <ul>
 *   <li>{@code pools}: comma-separated allowlist of ZFS pools volumes may be created in (required
 *       unless {@code default-pool} is given, which then is the only pool);
 *   <li>{@code default-pool}: the pool used when a volume names none (default: the first of {@code
 *       pools});
 *   <li>{@code parent-dataset}: the dataset below each pool that holds Caravan's volumes (default
 *       {@code caravan}, i.e. {@code <pool>/caravan/vol-...});
 *   <li>{@code reserve}: space kept free in each pool, never promised to volumes ({@code 0}, {@code
 *       512M}, {@code 10G}, ...; default 0: ZFS's {@code available} already excludes the pool's slop
 *       space);
 *   <li>{@code freeze-on-snapshot}: freeze a volume's filesystem around CreateSnapshot when it is
 *       staged on this node (default true; a snapshot's {@code freeze} parameter overrides it);
 *   <li>{@code device-wait-seconds}: how long NodeStage waits for a zvol's device node (default 30).
 * </ul>
 */
record LocalConfig(
    List<String> pools,
    String defaultPool,
    String parentDataset,
    long reserveBytes,
    boolean freezeOnSnapshot,
    Duration deviceWait) {

  static final String POOLS = "pools";
  static final String DEFAULT_POOL = "default-pool";
  static final String PARENT_DATASET = "parent-dataset";
  static final String RESERVE = "reserve";
  static final String FREEZE_ON_SNAPSHOT = "freeze-on-snapshot";
  static final String DEVICE_WAIT = "device-wait-seconds";
  static final Set<String> KEYS =
      Set.of(POOLS, DEFAULT_POOL, PARENT_DATASET, RESERVE, FREEZE_ON_SNAPSHOT, DEVICE_WAIT);
  static final String DEFAULT_PARENT = "caravan";

  /** A ZFS pool name as Caravan accepts it: a letter, then letters, digits, '_', '-', '.', ':'. */
  static final Pattern POOL = Pattern.compile("[A-Za-z][A-Za-z0-9_.:-]{0,62}");

  /** One component of a dataset path: starts with a letter or digit; no '/', '@', '#', '%', space. */
  static final Pattern COMPONENT = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_.:-]{0,62}");

  private static final Pattern SIZE = Pattern.compile("([0-9]{1,19})([KMGT]?)(I?B)?");

  LocalConfig {
    pools = List.copyOf(pools);
  }

  /**
   * Parses and checks the options.
   *
   * @throws IllegalArgumentException naming the key and the rule, for any bad or unknown option
   */
  static LocalConfig parse(Map<String, String> options) {
    Set<String> unknown = new TreeSet<>(options.keySet());
    unknown.removeAll(KEYS);
    if (!unknown.isEmpty()) {
      throw new IllegalArgumentException(
          "unknown local backend option(s) " + unknown.stream().map(k -> "local." + k).toList()
              + "; known: " + new TreeSet<>(KEYS).stream().map(k -> "local." + k).toList());
    }
    String defaultPool = blankToNull(options.get(DEFAULT_POOL));
    List<String> pools = new ArrayList<>();
    String list = blankToNull(options.get(POOLS));
    if (list != null) {
      Set<String> seen = new LinkedHashSet<>();
      for (String p : list.split(",", -1)) {
        String pool = p.strip();
        requirePool("local." + POOLS, pool);
        if (!seen.add(pool)) {
          throw new IllegalArgumentException("local." + POOLS + " names pool '" + pool + "' twice");
        }
      }
      pools.addAll(seen);
    } else if (defaultPool != null) {
      pools.add(defaultPool);
    } else {
      throw new IllegalArgumentException(
          "the local backend needs local." + POOLS + " (comma-separated allowlist of ZFS pools,"
              + " e.g. local.pools=tank) or local." + DEFAULT_POOL);
    }
    if (defaultPool == null) {
      defaultPool = pools.getFirst();
    }
    requirePool("local." + DEFAULT_POOL, defaultPool);
    if (!pools.contains(defaultPool)) {
      throw new IllegalArgumentException(
          "local." + DEFAULT_POOL + " '" + defaultPool + "' is not in local." + POOLS + " " + pools);
    }
    String parent = options.getOrDefault(PARENT_DATASET, DEFAULT_PARENT).strip();
    requireParent(parent);
    long reserve = parseSize("local." + RESERVE, options.getOrDefault(RESERVE, "0"));
    boolean freeze = parseBoolean("local." + FREEZE_ON_SNAPSHOT, options.getOrDefault(FREEZE_ON_SNAPSHOT, "true"));
    String wait = options.getOrDefault(DEVICE_WAIT, "30").strip();
    long waitSeconds;
    try {
      waitSeconds = Long.parseLong(wait);
    } catch (NumberFormatException e) {
      waitSeconds = -1;
    }
    if (waitSeconds < 1 || waitSeconds > 600) {
      throw new IllegalArgumentException(
          "local." + DEVICE_WAIT + " '" + wait + "' must be a whole number of seconds from 1 to 600");
    }
    return new LocalConfig(pools, defaultPool, parent, reserve, freeze, Duration.ofSeconds(waitSeconds));
  }

  /** The dataset that holds this backend's volumes in {@code pool}: {@code <pool>/<parent>}. */
  String parentIn(String pool) {
    return pool + "/" + parentDataset;
  }

  static void requirePool(String key, String pool) {
    if (!POOL.matcher(pool).matches()) {
      throw new IllegalArgumentException(
          key + " '" + pool + "' is not a pool name: a letter, then letters, digits, '_', '-', '.' or ':'"
              + " (at most 63 characters)");
    }
  }

  private static void requireParent(String parent) {
    String[] parts = parent.split("/", -1);
    for (String part : parts) {
      if (!COMPONENT.matcher(part).matches()) {
        throw new IllegalArgumentException(
            "local." + PARENT_DATASET + " '" + parent + "' must be a relative dataset path like caravan or"
                + " k8s/caravan: components of letters, digits, '_', '-', '.', ':' starting with a letter or"
                + " digit, separated by '/' (no '@', '#', '%', empty or '..' components)");
      }
    }
    if (parts.length > 8) {
      throw new IllegalArgumentException("local." + PARENT_DATASET + " '" + parent + "' is nested too deeply (at most 8 levels)");
    }
  }

  /** Bytes from {@code 0}, {@code 1048576}, {@code 512M}, {@code 10G}, {@code 1T}, {@code 16KiB}... */
  static long parseSize(String key, String value) {
    var m = SIZE.matcher(value.strip().toUpperCase(Locale.ROOT));
    if (m.matches()) {
      try {
        long n = Long.parseLong(m.group(1));
        int shift = switch (m.group(2)) {
          case "K" -> 10;
          case "M" -> 20;
          case "G" -> 30;
          case "T" -> 40;
          default -> 0;
        };
        if (n <= (Long.MAX_VALUE >> shift)) {
          return n << shift;
        }
      } catch (NumberFormatException e) {
        // falls through to the error below
      }
    }
    throw new IllegalArgumentException(
        key + " '" + value + "' is not a size: a whole number of bytes, optionally with K, M, G or T"
            + " (powers of 1024), e.g. 512M");
  }

  static boolean parseBoolean(String key, String value) {
    return switch (value.strip()) {
      case "true" -> true;
      case "false" -> false;
      default -> throw new IllegalArgumentException(key + " '" + value + "' must be true or false");
    };
  }

  private static String blankToNull(String s) {
    return s == null || s.isBlank() ? null : s.strip();
  }
}
