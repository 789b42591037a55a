package dev.caravan.csi.backend.local;

import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.BackendHalves;
import dev.caravan.csi.backend.BackendObject;
import dev.caravan.csi.backend.BoundedReadiness;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.PoolReport;
import dev.caravan.csi.backend.Readiness;
import dev.caravan.csi.backend.local.LocalIds.VolumeId;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.zfs.DatasetProperties;
import dev.caravan.storage.zfs.PoolHealth;
import dev.caravan.storage.zfs.PoolStatus;
import dev.caravan.storage.zfs.Property;
import dev.caravan.storage.zfs.Zfs;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Consumer;

/**
 * The {@code local} backend: node-local ZFS zvols through the host-storage ZFS facade (libzfs_core
 * and {@code /dev/zfs} ioctls; no {@code zfs} process). Settings: {@link LocalConfig}; parameters:
 * {@link LocalParameters}; ids: {@link LocalIds}.
 *
 * <p>Opening refuses (so that {@code caravan serve --driver=local} exits non-zero with the reason)
 * when the options are wrong, when ZFS is not available on the host, or when no allowlisted pool is
 * imported and ONLINE. Afterwards Probe is ready while at least one allowlisted pool is usable
 * (ONLINE or DEGRADED); a pool whose I/O is suspended is not, so a node whose only pool is suspended
 * answers FAILED_PRECONDITION naming it. The pool status is read within 4 s ({@link BoundedReadiness}):
 * when its ioctl blocks (ZFS reads every pool's status under one lock, which a pool operation waiting
 * on a stalled disk can hold), Probe still answers, not ready, before Nomad's 5 s, naming the pool
 * whose read is stuck and the last status read; while that read stays stuck, every Probe answers so
 * at once.
 */
public final class LocalBackend extends BackendHalves {
  /** The CreateVolume parameters this backend takes; any other is refused, naming these. */
  public static final Set<String> PARAMETERS = LocalParameters.KNOWN;

  private final Zfs zfs;
  private final LocalConfig config;
  private final LocalController controller;
  /** The pool whose status the readiness check reads at the moment, for the answer once it is late. */
  private volatile String reading = "";
  private final BoundedReadiness poolCheck =
      new BoundedReadiness(() -> "the status of ZFS pool " + reading, this::readPools);

  private LocalBackend(Zfs zfs, LocalConfig config, LocalController controller, LocalNode node) {
    super("local", controller, node);
    this.zfs = zfs;
    this.config = config;
    this.controller = controller;
  }

  /**
   * Opens the backend.
   *
   * @throws IllegalArgumentException for bad options or a node id that cannot be part of an id
   * @throws IllegalStateException when ZFS is unavailable or no allowlisted pool is imported and ONLINE
   */
  public static LocalBackend open(BackendConfig backendConfig) {
    LocalConfig config = LocalConfig.parse(backendConfig.options());
    String nodeId = backendConfig.nodeId();
    if (!LocalIds.NODE.matcher(nodeId).matches()) {
      throw new IllegalArgumentException(
          "node id '" + nodeId + "' cannot be used by the local backend: letters, digits, '_', '-', '.', ':'"
              + " (starting with a letter or digit, at most 63 characters); set --node-id");
    }
    for (String pool : config.pools()) {
      LocalIds.requireRoom(nodeId, pool, config.parentDataset());
    }
    Zfs zfs;
    try {
      zfs = Zfs.open();
    } catch (RuntimeException | LinkageError e) {
      // NativeLibraryUnavailableException normally; anything else from native loading is reported alike
      throw new IllegalStateException(
          "the local backend cannot start: " + e.getMessage() + " (allowlisted pools: " + config.pools() + ")", e);
    }
    try {
      Optional<String> refusal = startRefusal(config, statuses(zfs, config));
      if (refusal.isPresent()) {
        throw new IllegalStateException(refusal.get());
      }
      LocalController controller =
          new LocalController(zfs, config, nodeId, backendConfig.nodeUsage(), backendConfig.keyCosts().zfs());
      return new LocalBackend(zfs, config, controller, new LocalNode(zfs, controller, config, nodeId));
    } catch (RuntimeException e) {
      zfs.close();
      throw e;
    }
  }

  /**
   * The pools the options allowlist, as the backend would read them ({@code caravan doctor} checks
   * these).
   *
   * @throws IllegalArgumentException naming the key and the rule, for any bad or unknown option
   */
  public static List<String> allowlistedPools(Map<String, String> options) {
    return LocalConfig.parse(options).pools();
  }

  /** Each allowlisted pool's status, or empty when it is not imported (or cannot be read: message). */
  static Map<String, PoolState> statuses(Zfs zfs, LocalConfig config) {
    return statuses(zfs, config, pool -> {});
  }

  /** As {@link #statuses(Zfs, LocalConfig)}, telling {@code reading} each pool before its read. */
  private static Map<String, PoolState> statuses(Zfs zfs, LocalConfig config, Consumer<String> reading) {
    Map<String, PoolState> out = new LinkedHashMap<>();
    for (String pool : config.pools()) {
      reading.accept(pool);
      try {
        out.put(pool, zfs.pool(pool).map(s -> new PoolState(s.health(), ""))
            .orElse(new PoolState(null, "not imported")));
      } catch (StorageException e) {
        out.put(pool, new PoolState(null, "unreadable: " + e.getMessage()));
      }
    }
    return out;
  }

  /** A pool's health, or null with a reason when it is not there. */
  record PoolState(PoolHealth health, String problem) {
    @Override
    public String toString() {
      return health != null ? health.name() : problem;
    }
  }

  /** Why the backend must not start: no allowlisted pool is imported and ONLINE. */
  static Optional<String> startRefusal(LocalConfig config, Map<String, PoolState> pools) {
    boolean anyOnline = pools.values().stream().anyMatch(s -> s.health() == PoolHealth.ONLINE);
    if (anyOnline) {
      return Optional.empty();
    }
    return Optional.of("no allowlisted ZFS pool is imported and ONLINE: " + describe(pools)
        + "; import one (zpool import) or fix local.pools");
  }

  /** Probe: ready while at least one allowlisted pool is usable (ONLINE or DEGRADED). */
  static Readiness readiness(LocalConfig config, Map<String, PoolState> pools) {
    boolean usable = pools.values().stream().anyMatch(s -> s.health() != null && s.health().isUsable());
    String detail = "pools " + describe(pools) + " (default " + config.defaultPool() + ")";
    return usable ? Readiness.ready(detail) : Readiness.notReady("no usable allowlisted pool: " + detail);
  }

  private static String describe(Map<String, PoolState> pools) {
    List<String> parts = new ArrayList<>();
    pools.forEach((pool, state) -> parts.add(pool + "=" + state));
    return String.join(", ", parts);
  }

  @Override
  public Readiness readiness() {
    return poolCheck.get();
  }

  private Readiness readPools() {
    try {
      return readiness(config, statuses(zfs, config, pool -> reading = pool));
    } catch (RuntimeException e) {
      return Readiness.notReady("cannot read pool status: " + e.getMessage());
    }
  }

  @Override
  public BackendObject describe(String volumeId) {
    VolumeId v = LocalIds.parseVolume("volume_id", volumeId);
    Map<String, String> props = new TreeMap<>();
    props.put("node", v.node());
    try {
      controller.own("volume_id", volumeId);
    } catch (CsiException e) {
      props.put("owner", "node " + v.node() + " (not this node: not inspected)");
      return new BackendObject("zvol", Optional.of(v.dataset()), false, props, List.of(), Optional.empty());
    }
    // Unread is not absent: a zvol that cannot be read (its pool suspended, where ZFS's "no such
    // dataset" proves nothing, and find says UNAVAILABLE) is the inspector's unknown backend, never
    // its missing zvol, which would send an operator after a volume that is there.
    Optional<DatasetProperties> p;
    try {
      p = controller.find(v.dataset());
    } catch (StorageException e) {
      throw new CsiException(CsiException.Kind.UNAVAILABLE, "cannot read zvol " + v.dataset() + ": " + e.getMessage(),
          e);
    }
    List<String> snapshots = new ArrayList<>();
    Optional<Path> device = Optional.empty();
    if (p.isPresent()) {
      for (String name : List.of("volsize", "volblocksize", "refreservation", "used", "compression", "volmode",
          "caravan:managed", LocalController.PROP_NAME, LocalController.PROP_FS_TYPE, LocalController.PROP_SOURCE,
          LocalController.PROP_NODE, LocalController.PROP_ACCESS)) {
        p.get().get(name).map(Property::value).ifPresent(val -> props.put("zfs." + name, val));
      }
      // Whether it is encrypted and whether its key is loaded: never anything about the key itself.
      props.put("encrypted", p.get().isEncrypted() ? "yes" : "no");
      if (p.get().isEncrypted()) {
        props.put("zfs.keystatus", p.get().keyStatus().word());
        p.get().encryptionRoot().ifPresent(root -> props.put("zfs.encryptionroot", root));
      }
      // Each on its own: snapshots that cannot be listed (a pool in trouble) say nothing about the
      // device, and a device left out would read as detached.
      try {
        zfs.snapshots(v.dataset()).forEach(s -> snapshots.add(v.id() + s.substring(s.indexOf('@'))));
      } catch (StorageException e) {
        props.put("snapshots.error", String.valueOf(e.getMessage()));
      }
      try {
        device = Optional.of(zfs.zvolDevice(v.dataset(), Duration.ZERO));
      } catch (StorageException e) {
        props.put("device.error", String.valueOf(e.getMessage()));
      }
    }
    return new BackendObject("zvol", Optional.of(v.dataset()), p.isPresent(), props, snapshots, device);
  }

  @Override
  public String storageCheck() {
    return "zpool status -v " + String.join(" ", config.pools());
  }

  @Override
  public List<PoolReport> pools() {
    List<PoolReport> out = new ArrayList<>();
    List<VolumeId> volumes;
    try {
      volumes = controller.ownVolumes();
    } catch (RuntimeException e) {
      volumes = List.of();
    }
    for (String pool : config.pools()) {
      try {
        Optional<PoolStatus> s = zfs.pool(pool);
        long count = volumes.stream().filter(v -> v.pool().equals(pool)).count();
        out.add(s.map(st -> new PoolReport(pool, st.health() == PoolHealth.ONLINE, st.size(), st.allocated(),
                st.free(), count))
            .orElse(new PoolReport(pool, false, 0, 0, 0, count)));
      } catch (StorageException e) {
        out.add(new PoolReport(pool, false, 0, 0, 0, 0));
      }
    }
    return out;
  }

  @Override
  public void close() {
    zfs.close();
  }
}
