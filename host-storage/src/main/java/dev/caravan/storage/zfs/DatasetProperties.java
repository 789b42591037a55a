package dev.caravan.storage.zfs;

import dev.caravan.storage.internal.zfs.ZfsCommand;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * A dataset's properties with their sources, and the few statistics every dataset has, read in one
 * {@code ZFS_IOC_OBJSET_STATS} call. Immutable: a snapshot of the moment it was read.
 */
public final class DatasetProperties {
  /** Marks a value received by {@code zfs receive} in a property's source. */
  private static final String RECEIVED_SOURCE = "$recvd";

  /** {@code ZIO_CRYPT_OFF} in {@code enum zio_encrypt}. */
  private static final long ENCRYPTION_OFF = 2;

  private final String name;
  private final DatasetType type;
  private final boolean volume;
  private final long clones;
  private final long createTxg;
  private final long guid;
  private final String origin;
  private final boolean inconsistent;
  private final Map<String, Property> properties;

  DatasetProperties(
      String name,
      DatasetType type,
      boolean volume,
      long clones,
      long createTxg,
      long guid,
      String origin,
      boolean inconsistent,
      Map<String, Property> properties) {
    this.name = Objects.requireNonNull(name, "name");
    this.type = Objects.requireNonNull(type, "type");
    this.volume = volume;
    this.clones = clones;
    this.createTxg = createTxg;
    this.guid = guid;
    this.origin = Objects.requireNonNull(origin, "origin");
    this.inconsistent = inconsistent;
    this.properties = Collections.unmodifiableMap(new LinkedHashMap<>(properties));
  }

  /** Reads the reply of {@code ZFS_IOC_OBJSET_STATS}: fast stats plus the property nvlist. */
  static DatasetProperties from(
      String name, ZfsCommand.ObjsetStats stats, Map<String, Object> propertyList) {
    boolean volume = stats.type() == ZfsCommand.DMU_OST_ZVOL;
    DatasetType type =
        stats.snapshot()
            ? DatasetType.SNAPSHOT
            : volume
                ? DatasetType.VOLUME
                : stats.type() == ZfsCommand.DMU_OST_ZFS ? DatasetType.FILESYSTEM : DatasetType.OTHER;
    Map<String, Property> properties = new LinkedHashMap<>();
    propertyList.forEach(
        (property, entry) -> {
          if (entry instanceof Map<?, ?> pair && pair.containsKey("value")) {
            properties.put(property, property(name, property, pair));
          }
        });
    return new DatasetProperties(
        name,
        type,
        volume,
        stats.numClones(),
        stats.creationTxg(),
        stats.guid(),
        stats.origin(),
        stats.inconsistent(),
        properties);
  }

  private static Property property(String dataset, String property, Map<?, ?> pair) {
    Object value = pair.get("value");
    boolean numeric = value instanceof Long;
    String text = numeric ? Long.toUnsignedString((Long) value) : String.valueOf(value);
    PropertySource source;
    String setOn = "";
    if (!(pair.get("source") instanceof String where)) {
      source = PropertySource.NONE;
    } else if (where.isEmpty()) {
      source = PropertySource.DEFAULT;
    } else if (where.contains(RECEIVED_SOURCE)) {
      source = PropertySource.RECEIVED;
      setOn = dataset;
    } else if (where.equals(dataset)) {
      source = PropertySource.LOCAL;
      setOn = dataset;
    } else {
      source = PropertySource.INHERITED;
      setOn = where;
    }
    return new Property(property, text, numeric, source, setOn);
  }

  /** The dataset's full name: {@code pool/path} or {@code pool/path@snapshot}. */
  public String name() {
    return name;
  }

  public DatasetType type() {
    return type;
  }

  public boolean isSnapshot() {
    return type == DatasetType.SNAPSHOT;
  }

  /** Whether this is a volume or a snapshot of one. */
  public boolean isVolume() {
    return volume;
  }

  /** For a snapshot: how many clones depend on it. 0 otherwise. */
  public long clones() {
    return clones;
  }

  /** For a dependent clone ({@code zfs clone}): the snapshot it depends on. */
  public Optional<String> origin() {
    return origin.isEmpty() ? Optional.empty() : Optional.of(origin);
  }

  /** The transaction group the dataset was created in: orders snapshots by age. */
  public long createTxg() {
    return createTxg;
  }

  public long guid() {
    return guid;
  }

  /**
   * Whether a receive is still writing this dataset, or stopped part way through creating it (ZFS's
   * {@code inconsistent} flag): then it holds no usable data yet.
   */
  public boolean isInconsistent() {
    return inconsistent;
  }

  /**
   * The target's {@code receive_resume_token}: set while a resumable receive into it (or into its
   * hidden {@code %recv} child, for an incremental one) stopped part way; empty otherwise.
   */
  public Optional<String> receiveResumeToken() {
    return get("receive_resume_token").map(Property::value).filter(v -> !v.isEmpty() && !v.equals("-"));
  }

  /** Every property the kernel reported, by name, in its order. */
  public Map<String, Property> all() {
    return properties;
  }

  public Optional<Property> get(String property) {
    return Optional.ofNullable(properties.get(property));
  }

  /** A user property's value ({@code caravan:source}, ...), wherever it is set. */
  public Optional<String> userProperty(String property) {
    return get(property).map(Property::value);
  }

  /** Whether {@code marker} is set on this dataset itself. */
  public boolean isManagedBy(ManagedBy marker) {
    return marker.marks(this);
  }

  /** The volume size in bytes; throws for a filesystem. */
  public long volumeSize() {
    return number("volsize");
  }

  /** The volume block size in bytes; throws for a filesystem. */
  public long volumeBlockSize() {
    return number("volblocksize");
  }

  /** The {@code refreservation} in bytes; 0 when none is set (a sparse volume). */
  public long refReservation() {
    return get("refreservation").map(Property::asLong).orElse(0L);
  }

  /** The compression algorithm in effect, when the kernel reported one. */
  public Optional<Compression> compression() {
    return get("compression").filter(Property::numeric).map(p -> Compression.fromIndex(p.asLong()));
  }

  /** Whether ZFS native encryption protects the dataset ({@code encryption} is not {@code off}). */
  public boolean isEncrypted() {
    return get("encryption").filter(Property::numeric).map(p -> p.asLong() != ENCRYPTION_OFF).orElse(false);
  }

  /** The dataset whose key opens this one ({@code encryptionroot}); empty when not encrypted. */
  public Optional<String> encryptionRoot() {
    return get("encryptionroot").map(Property::value).filter(v -> !v.isEmpty());
  }

  /** Whether the key is loaded ({@code keystatus}); {@link KeyStatus#NONE} when not encrypted. */
  public KeyStatus keyStatus() {
    return get("keystatus").filter(Property::numeric).map(p -> KeyStatus.fromIndex(p.asLong()))
        .orElse(KeyStatus.NONE);
  }

  /** Whether the volume reserves its full size: its refreservation covers at least volsize. */
  public boolean isThick() {
    return isVolume() && refReservation() >= volumeSize();
  }

  private long number(String property) {
    return get(property)
        .map(Property::asLong)
        .orElseThrow(() -> new IllegalStateException(name + " has no " + property));
  }

  @Override
  public String toString() {
    return name + " " + type + " " + properties.values();
  }
}
