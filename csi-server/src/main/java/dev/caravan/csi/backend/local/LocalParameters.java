package dev.caravan.csi.backend.local;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Encryption;
import dev.caravan.csi.backend.IdRules;
import dev.caravan.csi.backend.ReplicationSettings;
import dev.caravan.storage.zfs.Compression;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * CreateVolume (and GetCapacity) parameters of the {@code local} backend, parsed and checked. Every
 * error is INVALID_ARGUMENT naming {@code parameters.<key>} and the rule; unknown keys never get here
 * (the services reject them, listing {@link #KNOWN}).
 *
 * @param pool the pool from the allowlist, or empty for "the default" (a clone's default is its
 *     source's pool)
 * @param host {@code auto} or an explicit node id
 * @param fsType ext4 or xfs, if given
 * @param volblocksize bytes, if given (power of two, 4K to 128K)
 * @param sparse no reservation
 * @param compression empty: inherit from the parent dataset
 * @param encrypted {@code encryption=on}: ZFS native encryption, the passphrase from the secrets
 * @param replication {@code replicas}, {@code replicationInterval}, {@code replicaNodes}
 */
record LocalParameters(
    Optional<String> pool,
    String host,
    Optional<String> fsType,
    OptionalLong volblocksize,
    boolean sparse,
    Optional<Compression> compression,
    boolean encrypted,
    ReplicationSettings replication) {

  static final String POOL = "pool";
  static final String HOST = "host";
  static final String FS_TYPE = "fsType";
  static final String VOLBLOCKSIZE = "volblocksize";
  static final String SPARSE = "sparse";
  static final String COMPRESSION = "compression";
  /** This backend's own keys, encryption's, and replication's as {@link ReplicationSettings#PARAMETERS} lists them. */
  static final Set<String> KNOWN = Stream.concat(
      Stream.of(POOL, HOST, FS_TYPE, VOLBLOCKSIZE, SPARSE, COMPRESSION, Encryption.PARAMETER),
      ReplicationSettings.PARAMETERS.stream()).collect(Collectors.toUnmodifiableSet());

  static final String AUTO = "auto";
  static final long DEFAULT_BLOCK = 16 * 1024;
  static final long MIN_BLOCK = 4 * 1024;
  static final long MAX_BLOCK = 128 * 1024;
  static final List<String> FS_TYPES = List.of("ext4", "xfs");

  /** The snapshot parameter that overrides {@code local.freeze-on-snapshot}. */
  static final String FREEZE = "freeze";

  private static final Pattern BLOCK = Pattern.compile("([0-9]{1,7})(K|KB|KIB)?");

  /** Parses {@code given} against the allowlist in {@code config}. */
  static LocalParameters parse(Map<String, String> given, LocalConfig config) {
    Optional<String> pool = Optional.ofNullable(given.get(POOL)).map(p -> {
      if (!config.pools().contains(p)) {
        throw CsiException.invalid(
            "parameters." + POOL + " '" + IdRules.printable(p) + "' is not an allowed pool on this node;"
                + " allowed: " + config.pools());
      }
      return p;
    });
    String host = given.getOrDefault(HOST, AUTO);
    if (!host.equals(AUTO) && !LocalIds.NODE.matcher(host).matches()) {
      throw CsiException.invalid(
          "parameters." + HOST + " '" + IdRules.printable(host) + "' must be 'auto' or a node id"
              + " (letters, digits, '_', '-', '.', ':'; at most 63 characters)");
    }
    Optional<String> fsType = Optional.ofNullable(given.get(FS_TYPE)).map(f -> {
      if (!FS_TYPES.contains(f)) {
        throw CsiException.invalid(
            "parameters." + FS_TYPE + " '" + IdRules.printable(f) + "' is not supported; supported: "
                + String.join(", ", FS_TYPES));
      }
      return f;
    });
    OptionalLong block = given.containsKey(VOLBLOCKSIZE)
        ? OptionalLong.of(blockSize(given.get(VOLBLOCKSIZE)))
        : OptionalLong.empty();
    boolean sparse = switch (given.getOrDefault(SPARSE, "false")) {
      case "true" -> true;
      case "false" -> false;
      default -> throw CsiException.invalid(
          "parameters." + SPARSE + " '" + IdRules.printable(given.get(SPARSE)) + "' must be true or false");
    };
    Optional<Compression> compression = Optional.ofNullable(given.get(COMPRESSION)).map(LocalParameters::compression);
    boolean encrypted = Encryption.mode(given) == Encryption.Mode.ON;
    return new LocalParameters(pool, host, fsType, block, sparse, compression, encrypted,
        ReplicationSettings.parse(given));
  }

  /** {@code 16K}, {@code 16k}, {@code 16KiB} or {@code 16384}: a power of two from 4K to 128K. */
  static long blockSize(String value) {
    Matcher m = BLOCK.matcher(value.strip().toUpperCase(Locale.ROOT));
    long bytes = -1;
    if (m.matches()) {
      bytes = Long.parseLong(m.group(1)) * (m.group(2) == null ? 1 : 1024);
    }
    if (bytes < MIN_BLOCK || bytes > MAX_BLOCK || Long.bitCount(bytes) != 1) {
      throw CsiException.invalid(
          "parameters." + VOLBLOCKSIZE + " '" + IdRules.printable(value) + "' must be a power of two from"
              + " 4K to 128K (4K, 8K, 16K, 32K, 64K or 128K; bytes or with a K suffix)");
    }
    return bytes;
  }

  private static Compression compression(String value) {
    for (Compression c : Compression.values()) {
      if (c.zfsName().equals(value)) {
        return c;
      }
    }
    throw CsiException.invalid(
        "parameters." + COMPRESSION + " '" + IdRules.printable(value) + "' is not supported; supported: "
            + String.join(", ", Arrays.stream(Compression.values()).map(Compression::zfsName).toList()));
  }

  /** The snapshot {@code freeze} parameter, or the configured default. */
  static boolean freeze(Map<String, String> snapshotParameters, boolean configured) {
    String v = snapshotParameters.get(FREEZE);
    if (v == null) {
      return configured;
    }
    return switch (v) {
      case "true" -> true;
      case "false" -> false;
      default -> throw CsiException.invalid(
          "parameters." + FREEZE + " '" + IdRules.printable(v) + "' must be true or false");
    };
  }

  long blockSizeOrDefault() {
    return volblocksize.orElse(DEFAULT_BLOCK);
  }
}
