package dev.caravan.storage.zfs;

import dev.caravan.bindings.zfs.ZfsCore;
import dev.caravan.storage.NativeLibraryUnavailableException;
import dev.caravan.storage.SyscallException;
import dev.caravan.storage.block.DeviceUse;
import dev.caravan.storage.internal.zfs.Lzc;
import dev.caravan.storage.internal.zfs.LzcKeys;
import dev.caravan.storage.internal.zfs.NvList;
import dev.caravan.storage.internal.zfs.VolumeReservation;
import dev.caravan.storage.internal.zfs.ZfsErrors;
import dev.caravan.storage.internal.zfs.ZfsIoctls;
import dev.caravan.storage.internal.zfs.ZfsLibrary;
import dev.caravan.storage.internal.zfs.ZfsModuleVersion;
import dev.caravan.storage.internal.zfs.ZvolDevices;
import dev.caravan.storage.zfs.ZfsRefusedException.Reason;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Every ZFS operation Caravan performs, named after the operation: pools, datasets, volumes,
 * snapshots and independent clones, through libzfs_core and ioctls on {@code /dev/zfs}. No {@code
 * zfs} or {@code zpool} process is ever started.
 *
 * <pre>{@code
 * try (Zfs zfs = Zfs.open()) {
 *   zfs.createZvol(ZvolSpec.of("tank/caravan/vol-1", 1L << 30));
 *   String snapshot = zfs.snapshot("tank/caravan/vol-1", "s1", Map.of());
 *   zfs.cloneIndependent(snapshot, ZvolSpec.of("tank/caravan/vol-2", 1L << 30));
 *   Path device = zfs.zvolDevice("tank/caravan/vol-2", Duration.ofSeconds(10));
 * }
 * }</pre>
 *
 * <p><b>Safety.</b> Only datasets carrying the ownership marker ({@link ManagedBy}, by default
 * {@code caravan:managed=true}, set locally on the dataset itself) are ever changed or destroyed;
 * the facade sets it on everything it creates. The one exception is a copy it began and did not
 * finish, which carries the marker only as received: {@link #finishCopy} finishes it. Destroy takes
 * one leaf at a time, never recursively, and
 * refuses a volume with snapshots or children, or a snapshot with clones; volumes only grow. A
 * refusal is a {@link ZfsRefusedException}, decided before ZFS is asked; a failure inside ZFS is a
 * {@link ZfsException} with the errno and any per-item errors.
 *
 * <p><b>Threads.</b> An instance is safe for concurrent use; close it when no call is running.
 * Opening is cheap (one {@code open(2)} of {@code /dev/zfs}).
 */
public final class Zfs implements AutoCloseable {
  /** How long destroy retries a dataset the kernel reports busy (udev probing a new zvol...). */
  private static final Duration BUSY_RETRY = Duration.ofSeconds(3);

  private static final Duration BUSY_PAUSE = Duration.ofMillis(100);
  private static final Duration DEVICE_POLL = Duration.ofMillis(25);
  private static final long CANMOUNT_OFF = 0;
  private static final long VOLMODE_NONE = 3; // zfs_volmode_t: default, geom, dev, none
  private static final long ENCRYPTION_AES_256_GCM = 8; // enum zio_encrypt
  private static final long KEYFORMAT_PASSPHRASE = 3; // zfs_keyformat_t: none, raw, hex, passphrase
  private static final String KEYLOCATION_PROMPT = "prompt";
  private static final SecureRandom RANDOM = new SecureRandom();

  private final ZfsIoctls ioctls;
  private final ManagedBy marker;
  private volatile boolean closed;

  private Zfs(ZfsIoctls ioctls, ManagedBy marker) {
    this.ioctls = ioctls;
    this.marker = marker;
  }

  /** Opens the facade with Caravan's marker, {@code caravan:managed=true}. */
  public static Zfs open() {
    return open(ManagedBy.CARAVAN);
  }

  /**
   * Opens the facade with {@code marker} as the ownership marker.
   *
   * @throws NativeLibraryUnavailableException when libzfs_core or libnvpair is not installed, when
   *     {@code /dev/zfs} cannot be opened (no zfs module, no permission), or when the loaded zfs
   *     module is not a version Caravan's {@code zfs_cmd_t} layout was verified for; the message
   *     says which.
   *     Nothing else in this class can then be reached, so no libzfs_core call can abort the JVM.
   */
  public static Zfs open(ManagedBy marker) {
    return open(marker, ZfsModuleVersion::readLoaded);
  }

  /**
   * {@link #open(ManagedBy)} with the module version read from {@code moduleVersion} (empty: no
   * module loaded). Package-private: tests feed versions a host without ZFS cannot have.
   */
  static Zfs open(ManagedBy marker, Supplier<Optional<String>> moduleVersion) {
    Objects.requireNonNull(marker, "marker");
    // Before any ioctl: an unverified module may expect a zfs_cmd_t of another size.
    Optional<String> loaded = moduleVersion.get();
    loaded.ifPresent(ZfsModuleVersion::requireVerified);
    ZfsLibrary.process().require();
    if (loaded.isEmpty()) {
      // /dev/zfs opened, yet no version published: a module we cannot check.
      ZfsModuleVersion.requireVerified(moduleVersion.get().orElse(""));
    }
    try {
      return new Zfs(ZfsIoctls.open(), marker);
    } catch (SyscallException e) {
      throw new NativeLibraryUnavailableException(
          "ZFS is not available on this host: " + ZfsLibrary.DEVICE + ": " + e.errnoName(), e);
    }
  }

  /** The ownership marker this instance writes and requires. */
  public ManagedBy marker() {
    return marker;
  }

  /**
   * Send streams in and out of this process, for replication: sending snapshots into Java channels,
   * receiving them resumably, resuming and aborting interrupted receives ({@link ZfsStreams}).
   */
  public ZfsStreams streams() {
    requireOpen();
    return new ZfsStreams(this);
  }

  // ------------------------------------------------------------------------------------------
  // Pools

  /**
   * The pool's health and space, or empty when no pool of that name is imported ({@code
   * ZFS_IOC_POOL_STATS}).
   */
  public Optional<PoolStatus> pool(String pool) {
    DatasetNames.requirePool(pool);
    return poolConfig(pool).map(PoolConfig::status);
  }

  /** A pool's status and raw config nvlist, read together. */
  record PoolConfig(PoolStatus status, Map<String, Object> config) {}

  private Optional<PoolConfig> poolConfig(String pool) {
    ZfsIoctls.Reply reply = ioctls().poolStats(pool);
    if (reply.errno() == ZfsErrors.ENOENT || reply.errno() == ZfsErrors.EINVAL) {
      return Optional.empty();
    }
    if (reply.errno() == ZfsErrors.EPERM || reply.errno() == ZfsErrors.EACCES) {
      ZfsFailures.orThrow(reply, "pool stats", pool);
    }
    return Optional.of(new PoolConfig(Pools.status(pool, reply), reply.reply()));
  }

  PoolConfig requireUsablePool(String dataset) {
    String pool = DatasetNames.pool(dataset);
    PoolConfig config =
        poolConfig(pool)
            .orElseThrow(
                () ->
                    new ZfsRefusedException(
                        Reason.POOL_UNAVAILABLE, pool, "pool " + pool + " is not imported"));
    if (!config.status().isUsable()) {
      throw new ZfsRefusedException(
          Reason.POOL_UNAVAILABLE,
          pool,
          "pool " + pool + " is " + config.status().health() + ": refusing to write to it");
    }
    return config;
  }

  // ------------------------------------------------------------------------------------------
  // Datasets

  /** Whether a filesystem, volume or snapshot of that name exists ({@code lzc_exists}). */
  public boolean exists(String dataset) {
    requireOpen();
    return Lzc.exists(Objects.requireNonNull(dataset, "dataset"));
  }

  /**
   * The dataset's properties with their sources ({@code ZFS_IOC_OBJSET_STATS}).
   *
   * @throws ZfsException with ENOENT when it does not exist
   */
  public DatasetProperties properties(String dataset) {
    return find(dataset)
        .orElseThrow(() -> new ZfsException("get properties of", dataset, ZfsErrors.ENOENT));
  }

  Optional<DatasetProperties> find(String dataset) {
    Objects.requireNonNull(dataset, "dataset");
    ZfsIoctls.Reply reply = ioctls().objsetStats(dataset, true);
    if (reply.errno() == ZfsErrors.ENOENT) {
      return Optional.empty();
    }
    ZfsFailures.orThrow(reply, "get properties of", dataset);
    return Optional.of(DatasetProperties.from(dataset, reply.stats(), reply.reply()));
  }

  /**
   * The direct children of a filesystem (full names, sorted), without snapshots ({@code
   * ZFS_IOC_DATASET_LIST_NEXT}).
   */
  public List<String> children(String dataset) {
    DatasetNames.requireDataset(dataset);
    List<String> names = new ArrayList<>(
            ZfsFailures.entries(ioctls().children(dataset), "list children", dataset).stream()
                .map(ZfsIoctls.Reply::name)
                .toList());
    if (names.isEmpty()) {
      requireExists(dataset, "list children of");
    }
    names.sort(Comparator.naturalOrder());
    return List.copyOf(names);
  }

  /**
   * The snapshots of a dataset (full names, {@code dataset@name}), oldest first ({@code
   * ZFS_IOC_SNAPSHOT_LIST_NEXT}).
   */
  public List<String> snapshots(String dataset) {
    DatasetNames.requireDataset(dataset);
    List<ZfsIoctls.Reply> snapshots =
        new ArrayList<>(ZfsFailures.entries(ioctls().snapshots(dataset), "list snapshots", dataset));
    if (snapshots.isEmpty()) {
      requireExists(dataset, "list snapshots of");
    }
    snapshots.sort(Comparator.comparingLong(s -> s.stats().creationTxg()));
    return snapshots.stream().map(ZfsIoctls.Reply::name).toList();
  }

  private void requireExists(String dataset, String operation) {
    if (!Lzc.exists(dataset)) {
      throw new ZfsException(operation, dataset, ZfsErrors.ENOENT);
    }
  }

  // ------------------------------------------------------------------------------------------
  // Volumes

  /**
   * Creates a volume ({@code lzc_create}, {@code DMU_OST_ZVOL}) carrying the ownership marker and
   * {@code spec}'s user properties. Missing parents are created as filesystems with {@code
   * canmount=off} and no marker. A thick volume reserves what {@code zfs create -V} would.
   *
   * @throws ZfsRefusedException when the pool is not imported or not usable
   * @throws ZfsException with EEXIST when the dataset exists, and other kernel errors
   */
  public void createZvol(ZvolSpec spec) {
    create(spec, null, null);
  }

  /**
   * As {@link #createZvol}, encrypted with ZFS native encryption as {@code zfs create -o
   * encryption=aes-256-gcm -o keyformat=passphrase -o keylocation=prompt} makes it: the volume is
   * its own encryption root, its wrapping key is derived from {@code passphrase} as OpenZFS's tools
   * derive it (PBKDF2-HMAC-SHA1 over a random 64-bit {@code pbkdf2salt}, {@code pbkdf2iters} as
   * {@code cost} says; {@link Pbkdf2Iters#DEFAULT} is what {@code zfs create} uses), so {@code zfs
   * load-key} with the same passphrase opens it, and no key file exists. The key is loaded when this
   * returns; {@link #unloadKey} unloads it. The derived key is zeroed after the call; {@code
   * passphrase} is the caller's to zero.
   *
   * @param passphrase 8 to 512 bytes
   * @throws ZfsException as {@link #createZvol} does; ENOTSUP when the pool lacks the encryption
   *     feature
   */
  public void createEncryptedZvol(ZvolSpec spec, byte[] passphrase, Pbkdf2Iters cost) {
    Objects.requireNonNull(passphrase, "passphrase");
    Objects.requireNonNull(cost, "cost");
    create(spec, passphrase, cost);
  }

  private void create(ZvolSpec spec, byte[] passphrase, Pbkdf2Iters cost) {
    Objects.requireNonNull(spec, "spec");
    PoolConfig pool = requireUsablePool(spec.name());
    createParents(spec.name());
    try (NvList properties = NvList.create()) {
      properties.add("volsize", spec.size());
      spec.blockSize().ifPresent(b -> properties.add("volblocksize", b));
      spec.compression().ifPresent(c -> properties.add("compression", c.index()));
      if (!spec.sparse()) {
        int copies = copies(properties(DatasetNames.parent(spec.name())));
        properties.add(
            "refreservation", reservation(pool, spec.size(), spec.effectiveBlockSize(), copies));
      }
      properties.add(marker.property(), marker.value());
      spec.userProperties().forEach(properties::add);
      byte[] wrappingKey = null;
      try {
        if (passphrase != null) {
          long salt = newSalt();
          wrappingKey = WrappingKeys.derive(passphrase, salt, cost.count());
          properties.add("encryption", ENCRYPTION_AES_256_GCM);
          properties.add("keyformat", KEYFORMAT_PASSPHRASE);
          properties.add("keylocation", KEYLOCATION_PROMPT);
          properties.add("pbkdf2salt", salt);
          properties.add("pbkdf2iters", cost.count());
        }
        ZfsFailures.orThrow(
            Lzc.create(spec.name(), ZfsCore.LZC_DATSET_TYPE_ZVOL(), properties, wrappingKey),
            "create",
            spec.name());
      } finally {
        if (wrappingKey != null) {
          Arrays.fill(wrappingKey, (byte) 0);
        }
      }
    }
  }

  /** A random {@code pbkdf2salt}, never 0 (the value of "no salt"). */
  private static long newSalt() {
    long salt;
    do {
      salt = RANDOM.nextLong();
    } while (salt == 0);
    return salt;
  }

  // ------------------------------------------------------------------------------------------
  // Encryption keys

  /** Whether the dataset's encryption key is loaded ({@code keystatus}). */
  public KeyStatus keyStatus(String dataset) {
    return properties(dataset).keyStatus();
  }

  /**
   * Loads the key of a managed, passphrase-encrypted dataset's encryption root ({@code
   * lzc_load_key}), as {@code zfs load-key} does with that passphrase; a volume's device appears
   * once it is loaded. When the key is loaded already, the passphrase is still checked ({@code
   * lzc_load_key} with {@code noop}), so a wrong one never passes. The derived key is zeroed after
   * the call; {@code passphrase} is the caller's to zero.
   *
   * @return true when this call loaded the key, false when it was loaded already
   * @throws WrongKeyException when the passphrase does not open it
   * @throws ZfsRefusedException when the dataset is not managed, or not encrypted with a passphrase
   */
  public boolean loadKey(String dataset, byte[] passphrase) {
    Objects.requireNonNull(passphrase, "passphrase");
    DatasetProperties root = encryptionRoot(dataset, "load the key of");
    long salt = root.get("pbkdf2salt").map(Property::asLong).orElse(0L);
    long iterations = root.get("pbkdf2iters").map(Property::asLong).orElse(0L);
    byte[] wrappingKey = WrappingKeys.derive(passphrase, salt, iterations);
    try {
      if (root.keyStatus() != KeyStatus.AVAILABLE) {
        Lzc.Result loaded = LzcKeys.loadKey(root.name(), false, wrappingKey);
        if (loaded.errno() == ZfsErrors.EACCES) {
          throw new WrongKeyException(root.name());
        }
        if (loaded.errno() != ZfsErrors.EEXIST) { // EEXIST: another caller loaded it meanwhile
          ZfsFailures.orThrow(loaded, "load key of", root.name());
          return true;
        }
      }
      Lzc.Result checked = LzcKeys.loadKey(root.name(), true, wrappingKey);
      if (checked.errno() == ZfsErrors.EACCES) {
        throw new WrongKeyException(root.name());
      }
      ZfsFailures.orThrow(checked, "check key of", root.name());
      return false;
    } finally {
      Arrays.fill(wrappingKey, (byte) 0);
    }
  }

  /**
   * Sets a new passphrase on a managed, passphrase-encrypted dataset's encryption root, as {@code
   * zfs change-key -o keyformat=passphrase} does ({@code lzc_change_key}): the master key is
   * wrapped with the key derived from {@code passphrase} under a new random {@code pbkdf2salt} and
   * the root's own {@code pbkdf2iters}; no data is rewritten. Every dataset under that root changes
   * with it: its snapshots, and clones that share the root. The key must be loaded (with the
   * current passphrase, {@link #loadKey}) and stays loaded. One transaction: a crash leaves either
   * passphrase, never neither.
   *
   * @throws ZfsRefusedException when the dataset is not managed, or not encrypted with a passphrase
   * @throws ZfsException with EACCES when its key is not loaded
   */
  public void changePassphrase(String dataset, byte[] passphrase) {
    Objects.requireNonNull(passphrase, "passphrase");
    DatasetProperties root = encryptionRoot(dataset, "change the passphrase of");
    long iterations = root.get("pbkdf2iters").map(Property::asLong).orElse(0L);
    long salt = newSalt();
    byte[] wrappingKey = WrappingKeys.derive(passphrase, salt, iterations);
    try (NvList properties = NvList.create()) {
      properties.add("keyformat", KEYFORMAT_PASSPHRASE);
      properties.add("keylocation", KEYLOCATION_PROMPT);
      properties.add("pbkdf2salt", salt);
      properties.add("pbkdf2iters", iterations);
      Lzc.Result changed = LzcKeys.changeKey(root.name(), properties, wrappingKey);
      ZfsFailures.orThrow(
          changed,
          "change key of",
          root.name(),
          changed.errno() == ZfsErrors.EACCES ? "is its key loaded?" : null);
    } finally {
      Arrays.fill(wrappingKey, (byte) 0);
    }
  }

  /**
   * Unloads the key of a managed, encrypted dataset's encryption root ({@code lzc_unload_key}); a
   * volume's device goes away with it. Retries for a few seconds while ZFS reports it busy.
   *
   * @return true when this call unloaded it, false when it was not loaded
   * @throws ZfsException with EBUSY while the dataset is in use (a volume's device open or mounted)
   */
  public boolean unloadKey(String dataset) {
    DatasetProperties root = encryptionRoot(dataset, "unload the key of");
    if (root.keyStatus() != KeyStatus.AVAILABLE) {
      return false;
    }
    // Busy for a moment after an unmount or a device close (udev still probing): retried a while.
    Lzc.Result unloaded = retryWhileBusy(() -> LzcKeys.unloadKey(root.name()));
    if (unloaded.errno() == ZfsErrors.EACCES) {
      return false; // another caller unloaded it meanwhile
    }
    ZfsFailures.orThrow(
        unloaded,
        "unload key of",
        root.name(),
        unloaded.errno() == ZfsErrors.EBUSY ? "is its device open or mounted?" : null);
    return true;
  }

  /** The managed, passphrase-encrypted encryption root of {@code dataset}. */
  private DatasetProperties encryptionRoot(String dataset, String operation) {
    DatasetProperties properties = properties(dataset);
    if (!isUnfinishedCopy(properties)) { // a copy of an encrypted volume may need its key to finish
      requireManaged(properties, operation);
    }
    if (!properties.isEncrypted()) {
      throw new ZfsRefusedException(
          Reason.NOT_ENCRYPTED, dataset, "cannot " + operation + " " + dataset + ": it is not encrypted");
    }
    String rootName = properties.encryptionRoot().orElse(dataset);
    DatasetProperties root = rootName.equals(dataset) ? properties : properties(rootName);
    if (root.get("keyformat").filter(Property::numeric).map(Property::asLong).orElse(0L)
        != KEYFORMAT_PASSPHRASE) {
      throw new ZfsRefusedException(
          Reason.NOT_ENCRYPTED,
          dataset,
          "cannot " + operation + " " + dataset + ": its encryption root " + rootName
              + " does not take a passphrase (keyformat)");
    }
    return root;
  }

  /**
   * Grows a volume to {@code newSize} bytes ({@code ZFS_IOC_SET_PROP}); a thick volume's
   * reservation grows with it, first, so a pool without the space refuses before the size changes.
   * Growing to the current size does nothing.
   *
   * @throws ZfsRefusedException when the volume would shrink, or is not managed or not a volume
   * @throws IllegalArgumentException when {@code newSize} is not a multiple of the block size
   */
  public void growZvol(String volume, long newSize) {
    DatasetNames.requireChild(volume);
    DatasetProperties current = requireManagedVolume(volume, "grow");
    long size = current.volumeSize();
    if (newSize < size) {
      throw new ZfsRefusedException(
          Reason.SHRINK,
          volume,
          "refusing to shrink "
              + volume
              + " from "
              + size
              + " to "
              + newSize
              + " bytes: volumes only grow");
    }
    if (newSize == size) {
      return;
    }
    requireBlockMultiple(newSize, current.volumeBlockSize());
    resize(current, newSize, current.isThick());
  }

  /** Sets volsize (and first, when {@code thick}, the matching refreservation). */
  private void resize(DatasetProperties volume, long newSize, boolean thick) {
    String name = volume.name();
    long oldReservation = volume.refReservation();
    if (thick) {
      long reservation =
          reservation(
              requireUsablePool(name), newSize, volume.volumeBlockSize(), copies(volume));
      if (reservation > oldReservation) {
        setProperties(name, Map.of("refreservation", reservation));
      }
    }
    try {
      setProperties(name, Map.of("volsize", newSize));
    } catch (RuntimeException e) {
      if (thick) {
        try {
          setProperties(name, Map.of("refreservation", oldReservation));
        } catch (RuntimeException undo) {
          e.addSuppressed(undo);
        }
      }
      throw e;
    }
  }

  /**
   * Destroys one managed filesystem or volume ({@code lzc_destroy}), never recursively. Retries
   * for a few seconds while ZFS reports it busy.
   *
   * @return false when it did not exist
   * @throws ZfsRefusedException when it is not managed, has snapshots or children, or is a volume
   *     whose device is in use ({@link DeviceUse}: mounted, bound at a target, held, opened
   *     exclusively)
   * @throws ZfsException with EBUSY when it stayed busy (open, mounted, in use)
   */
  public boolean destroy(String dataset) {
    DatasetNames.requireChild(dataset);
    Optional<DatasetProperties> found = find(dataset);
    if (found.isEmpty()) {
      return false;
    }
    requireManaged(found.get(), "destroy");
    List<String> children = children(dataset);
    if (!children.isEmpty()) {
      throw new ZfsRefusedException(
          Reason.HAS_CHILDREN,
          dataset,
          "refusing to destroy " + dataset + ": it has children " + children);
    }
    List<String> snapshots = snapshots(dataset);
    if (!snapshots.isEmpty()) {
      throw new ZfsRefusedException(
          Reason.HAS_SNAPSHOTS,
          dataset,
          "refusing to destroy " + dataset + ": it has snapshots " + snapshots);
    }
    if (found.get().isVolume()) {
      requireUnusedDevice(dataset);
    }
    Lzc.Result result = retryWhileBusy(() -> Lzc.destroy(dataset));
    if (result.errno() == ZfsErrors.ENOENT) {
      return false;
    }
    ZfsFailures.orThrow(
        result,
        "destroy",
        dataset,
        result.errno() == ZfsErrors.EBUSY
            ? "still busy after " + BUSY_RETRY.toSeconds() + " s: is it open, mounted or in use?"
            : null);
    return true;
  }

  /**
   * Refuses while the volume's device is in use ({@link DeviceUse}). ZFS itself refuses only while the
   * device is open; a bind of its node at a publish target (block access) holds nothing open, so
   * without this the zvol would be destroyed under a published volume. A volume without a device node
   * (volmode=none, or one not made yet) is used by nothing.
   */
  private void requireUnusedDevice(String volume) {
    Path device;
    try {
      device = zvolDevice(volume, Duration.ZERO);
    } catch (ZfsException e) {
      return;
    }
    DeviceUse use = DeviceUse.of(device);
    if (use.inUse()) {
      throw new ZfsRefusedException(
          Reason.IN_USE, volume, "refusing to destroy " + volume + ": its device " + use.describe());
    }
  }

  /**
   * The volume's block device: {@code /dev/zvol/<volume>} once udev has created it, or, when no
   * udev daemon runs here, the {@code /dev/zdN} node whose {@code BLKZNAME} is the volume. Waits up
   * to {@code wait} for it to appear (ZFS creates the device asynchronously after create, clone or
   * import); if udev runs but made no link in time, falls back to {@code /dev/zdN}.
   *
   * @throws ZfsException with ETIMEDOUT when no device appeared in time, ENODEV at once when the
   *     volume has {@code volmode=none}
   */
  public Path zvolDevice(String volume, Duration wait) {
    DatasetNames.requireChild(volume);
    Objects.requireNonNull(wait, "wait");
    DatasetProperties properties = properties(volume);
    if (!properties.isVolume() || properties.isSnapshot()) {
      throw notAVolume(properties);
    }
    if (properties.get("volmode").filter(Property::numeric).map(Property::asLong).orElse(0L)
        == VOLMODE_NONE) {
      throw new ZfsException(
          "find the device of", volume, ZfsErrors.ENODEV, Map.of(), "volmode=none: no device");
    }
    Path link = ZvolDevices.udevLink(volume);
    boolean udev = ZvolDevices.udevRunning();
    long deadline = System.nanoTime() + wait.toNanos();
    while (true) {
      if (udev ? Files.exists(link) : ZvolDevices.findByName(volume).isPresent()) {
        return udev ? link : ZvolDevices.findByName(volume).orElseThrow();
      }
      if (System.nanoTime() - deadline >= 0) {
        break;
      }
      pause(DEVICE_POLL);
    }
    return ZvolDevices.findByName(volume)
        .orElseThrow(
            () ->
                new ZfsException(
                    "find the device of",
                    volume,
                    ZfsErrors.ETIMEDOUT,
                    Map.of(),
                    "no "
                        + (udev ? link + " link or " : "")
                        + "/dev/zd* device appeared within "
                        + wait.toMillis()
                        + " ms"));
  }

  /**
   * Whether {@code device} (a {@code /dev/zdN} node or a link to one) is the block device of zvol
   * {@code volume}, as the device itself says ({@code BLKZNAME}): the check for a device recorded
   * earlier, whose number the kernel may since have given to another zvol (numbers follow the order
   * zvols appear in, which an import or reboot changes). False when the device is gone or not a zvol.
   */
  public static boolean isDeviceOf(Path device, String volume) {
    return ZvolDevices.nameOf(device).map(volume::equals).orElse(false);
  }

  // ------------------------------------------------------------------------------------------
  // Snapshots and clones

  /** {@link #snapshot(String, String, Map)} without user properties. */
  public String snapshot(String dataset, String name) {
    return snapshot(dataset, name, Map.of());
  }

  /**
   * Snapshots a managed dataset ({@code lzc_snapshot}); the snapshot carries the marker and {@code
   * userProperties}.
   *
   * @return the snapshot's full name, {@code dataset@name}
   * @throws ZfsException with EEXIST (and the item error) when the snapshot exists
   */
  public String snapshot(String dataset, String name, Map<String, String> userProperties) {
    DatasetNames.requireDataset(dataset);
    DatasetNames.requireSnapshotName(name);
    Map<String, String> extra = UserProperties.checked(userProperties, marker);
    requireManaged(properties(dataset), "snapshot");
    String snapshot = dataset + "@" + name;
    try (NvList properties = NvList.create()) {
      properties.add(marker.property(), marker.value());
      extra.forEach(properties::add);
      ZfsFailures.orThrow(Lzc.snapshot(List.of(snapshot), properties), "snapshot", snapshot);
    }
    return snapshot;
  }

  /**
   * Destroys one managed snapshot now ({@code lzc_destroy_snaps}, never deferred).
   *
   * @return false when it did not exist
   * @throws ZfsRefusedException when it is not managed or clones depend on it
   */
  public boolean destroySnapshot(String snapshot) {
    DatasetNames.requireSnapshot(snapshot);
    Optional<DatasetProperties> found = find(snapshot);
    if (found.isEmpty()) {
      return false;
    }
    requireManaged(found.get(), "destroy");
    if (found.get().clones() > 0) {
      throw new ZfsRefusedException(
          Reason.HAS_CLONES,
          snapshot,
          "refusing to destroy " + snapshot + ": " + found.get().clones() + " clone(s) depend on it");
    }
    Lzc.Result result = retryWhileBusy(() -> Lzc.destroySnapshots(List.of(snapshot)));
    ZfsFailures.orThrow(
        result,
        "destroy",
        snapshot,
        result.errno() == ZfsErrors.EBUSY ? "it is held or being sent" : null);
    return true;
  }

  /**
   * Copies a volume snapshot into a new, independent volume: {@link #receiveCopy} then {@link
   * #finishCopy}. The new volume shares no blocks with its source (unlike {@code zfs clone}), so the
   * source and its snapshot can be destroyed afterwards. If a step fails, the new volume is
   * destroyed again; if the process dies between the two steps, {@link #finishCopy} finishes the
   * copy later.
   *
   * @param target name, size (at least the source's) and options of the new volume; its block
   *     size must be empty or equal to the source's
   * @throws ZfsRefusedException when the source is not a volume snapshot, the target would be
   *     smaller than the source, or the target's pool is not usable
   */
  public void cloneIndependent(String sourceSnapshot, ZvolSpec target) {
    receiveCopy(sourceSnapshot, target);
    finishCopy(target);
  }

  /**
   * The first step of {@link #cloneIndependent}: {@code lzc_send} streams the snapshot into a pipe
   * from a helper thread while {@code lzc_receive} reads it, all in this process. The new volume
   * carries the marker and {@code target}'s user properties as <em>received</em> properties from
   * the moment it exists, and the snapshot the receive made. Until {@link #finishCopy} it is an
   * {@linkplain #isUnfinishedCopy unfinished copy}: not {@linkplain ManagedBy#marks managed}, so no
   * other operation of the facade changes or destroys it.
   *
   * @throws ZfsRefusedException as {@link #cloneIndependent} does
   * @throws ZfsException with EEXIST when {@code target} exists
   */
  public void receiveCopy(String sourceSnapshot, ZvolSpec target) {
    DatasetNames.requireSnapshot(sourceSnapshot);
    Objects.requireNonNull(target, "target");
    DatasetProperties source = properties(sourceSnapshot);
    if (!source.isVolume()) {
      throw notAVolume(source);
    }
    requireFits(target, source.volumeSize(), source.volumeBlockSize(), "copy " + sourceSnapshot);
    requireUsablePool(target.name());
    createParents(target.name());

    String received = target.name() + "@" + DatasetNames.shortSnapshotName(sourceSnapshot);
    Map<String, String> properties = new LinkedHashMap<>(target.userProperties());
    properties.put(marker.property(), marker.value());
    // An encrypted source travels raw: its blocks stay encrypted, no key is needed, and the copy
    // is its own encryption root opened by the source's passphrase.
    IndependentCopy.Outcome copied =
        IndependentCopy.run(sourceSnapshot, received, properties, source.isEncrypted());
    try {
      copied.orThrow(sourceSnapshot, received);
    } catch (RuntimeException e) {
      if (copied.createdTarget()) { // only then is the target ours to remove
        removeUnfinished(target.name(), e);
      }
      throw e;
    }
  }

  /**
   * The second step of {@link #cloneIndependent}, also the way to finish a copy whose process died
   * after {@link #receiveCopy}: destroys the snapshot the receive made, reserves what a thick
   * volume needs, grows the volume to {@code target}'s size, and last, in one {@code
   * ZFS_IOC_SET_PROP}, sets the marker, {@code target}'s user properties and compression locally.
   * That last step is what makes the copy finished and managed, so a copy interrupted anywhere
   * before it is still {@linkplain #isUnfinishedCopy unfinished} and this method can run again. If a
   * step fails (rather than the process dying), the unfinished copy is destroyed.
   *
   * <p>Finishing a finished copy with the same user properties does nothing.
   *
   * @param target the spec {@link #receiveCopy} was given, or one differing only in size (at least
   *     the copy's), sparseness and compression
   * @throws ZfsRefusedException {@link Reason#NOT_MANAGED} when {@code target} is not an unfinished
   *     copy made by this manager with exactly {@code target}'s user properties (nor such a finished
   *     one); {@link Reason#SHRINK} when it would shrink
   * @throws ZfsException with ENOENT when it does not exist
   */
  public void finishCopy(ZvolSpec target) {
    Objects.requireNonNull(target, "target");
    String name = target.name();
    DatasetNames.requireChild(name);
    DatasetProperties copy = properties(name);
    if (!copy.isVolume() || copy.isSnapshot()) {
      throw notAVolume(copy);
    }
    boolean finished = marker.marks(copy);
    if (!(finished || isUnfinishedCopy(copy)) || !carries(copy, target.userProperties())) {
      throw new ZfsRefusedException(
          Reason.NOT_MANAGED,
          name,
          "refusing to finish "
              + name
              + ": it is not "
              + (finished ? "a copy" : "an unfinished copy")
              + " made by this manager ("
              + marker
              + ") with the user properties "
              + target.userProperties());
    }
    if (finished) {
      return;
    }
    long blockSize = copy.volumeBlockSize();
    requireFits(target, copy.volumeSize(), blockSize, "finish the copy " + name);
    try {
      List<String> received = snapshots(name);
      if (!received.isEmpty()) {
        ZfsFailures.orThrow(
            retryWhileBusy(() -> Lzc.destroySnapshots(received)), "destroy", received.getFirst());
      }
      if (!target.sparse()) {
        long reservation =
            reservation(requireUsablePool(name), target.size(), blockSize, copies(copy));
        setProperties(name, Map.of("refreservation", reservation));
      }
      if (target.size() > copy.volumeSize()) {
        resize(properties(name), target.size(), false);
      }
      try (NvList properties = NvList.create()) {
        properties.add(marker.property(), marker.value());
        target.userProperties().forEach(properties::add);
        target.compression().ifPresent(c -> properties.add("compression", c.index()));
        setProperties(name, properties);
      }
    } catch (RuntimeException e) {
      removeUnfinished(name, e);
      throw e;
    }
  }

  /**
   * Whether {@code dataset} is a copy this manager began ({@link #receiveCopy}) and has not
   * finished: it carries the marker only as a received property. Such a volume is not {@linkplain
   * ManagedBy#marks managed}; {@link #finishCopy} is the one operation that touches it.
   */
  public boolean isUnfinishedCopy(DatasetProperties dataset) {
    return dataset.isVolume() && !dataset.isSnapshot() && marker.marksReceived(dataset);
  }

  /** Whether every one of {@code userProperties} has that value on {@code dataset}. */
  private static boolean carries(DatasetProperties dataset, Map<String, String> userProperties) {
    return userProperties.entrySet().stream()
        .allMatch(p -> dataset.userProperty(p.getKey()).filter(p.getValue()::equals).isPresent());
  }

  /** A copy of a volume of {@code size} bytes in blocks of {@code blockSize} can become {@code target}. */
  private static void requireFits(ZvolSpec target, long size, long blockSize, String operation) {
    if (target.blockSize().isPresent() && target.blockSize().getAsLong() != blockSize) {
      throw new IllegalArgumentException(
          "a copy keeps its source's volblocksize ("
              + blockSize
              + "); "
              + target.name()
              + " asks for "
              + target.blockSize().getAsLong());
    }
    if (target.size() < size) {
      throw new ZfsRefusedException(
          Reason.SHRINK,
          target.name(),
          "refusing to "
              + operation
              + " ("
              + size
              + " bytes) into the smaller "
              + target.name()
              + " ("
              + target.size()
              + " bytes)");
    }
    requireBlockMultiple(target.size(), blockSize);
  }

  /**
   * Destroys an unfinished copy and its snapshots, bypassing the marker check (it carries the
   * marker only as received); a failure to do so is added to {@code cause}.
   */
  private void removeUnfinished(String name, RuntimeException cause) {
    try {
      List<String> snapshots = ZfsFailures.entries(ioctls().snapshots(name), "list snapshots", name).stream()
              .map(ZfsIoctls.Reply::name)
              .toList();
      if (!snapshots.isEmpty()) {
        Lzc.destroySnapshots(snapshots);
      }
      ZfsFailures.orThrow(retryWhileBusy(() -> Lzc.destroy(name)), "destroy", name);
    } catch (RuntimeException undo) {
      cause.addSuppressed(undo);
    }
  }

  // ------------------------------------------------------------------------------------------
  // Helpers

  private DatasetProperties requireManagedVolume(String volume, String operation) {
    DatasetProperties properties = properties(volume);
    if (!properties.isVolume() || properties.isSnapshot()) {
      throw notAVolume(properties);
    }
    requireManaged(properties, operation);
    return properties;
  }

  private void requireManaged(DatasetProperties dataset, String operation) {
    if (!marker.marks(dataset)) {
      throw new ZfsRefusedException(
          Reason.NOT_MANAGED,
          dataset.name(),
          "refusing to "
              + operation
              + " "
              + dataset.name()
              + ": it does not carry "
              + marker
              + " (not created by this manager)");
    }
  }

  private static ZfsRefusedException notAVolume(DatasetProperties dataset) {
    return new ZfsRefusedException(
        Reason.NOT_A_VOLUME,
        dataset.name(),
        dataset.name() + " is a " + dataset.type().name().toLowerCase(java.util.Locale.ROOT)
            + (dataset.isVolume() ? " of a volume" : "") + ", not a volume");
  }

  private static void requireBlockMultiple(long size, long blockSize) {
    if (size % blockSize != 0) {
      throw new IllegalArgumentException(
          "size " + size + " is not a multiple of the volume block size " + blockSize);
    }
  }

  /** Creates each missing ancestor of {@code dataset} below the pool, as canmount=off. */
  void createParents(String dataset) {
    List<String> missing = new ArrayList<>();
    for (String parent = DatasetNames.parent(dataset);
        parent.contains("/") && !Lzc.exists(parent);
        parent = DatasetNames.parent(parent)) {
      missing.addFirst(parent);
    }
    for (String parent : missing) {
      try (NvList properties = NvList.create().add("canmount", CANMOUNT_OFF)) {
        Lzc.Result result = Lzc.create(parent, ZfsCore.LZC_DATSET_TYPE_ZFS(), properties);
        if (result.errno() != ZfsErrors.EEXIST) { // another caller won the race: fine
          ZfsFailures.orThrow(result, "create parent", parent);
        }
      }
    }
  }

  private static int copies(DatasetProperties dataset) {
    return dataset.get("copies").filter(Property::numeric).map(p -> (int) p.asLong()).orElse(1);
  }

  private static long reservation(PoolConfig pool, long size, long blockSize, int copies) {
    return VolumeReservation.of(
        size, blockSize, copies, VolumeReservation.topLevelVdevs(pool.config()));
  }

  private void setProperties(String dataset, Map<String, ?> values) {
    try (NvList properties = NvList.of(values)) {
      setProperties(dataset, properties);
    }
  }

  private void setProperties(String dataset, NvList properties) {
    ZfsFailures.orThrow(ioctls().setProperties(dataset, properties), "set properties of", dataset);
  }

  static Lzc.Result retryWhileBusy(Supplier<Lzc.Result> call) {
    long deadline = System.nanoTime() + BUSY_RETRY.toNanos();
    while (true) {
      Lzc.Result result = call.get();
      if (result.errno() != ZfsErrors.EBUSY || System.nanoTime() - deadline >= 0) {
        return result;
      }
      pause(BUSY_PAUSE);
    }
  }

  private static void pause(Duration duration) {
    try {
      Thread.sleep(duration);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ZfsException("wait", "(interrupted)", ZfsErrors.EINTR);
    }
  }

  ZfsIoctls ioctls() {
    requireOpen();
    return ioctls;
  }

  private void requireOpen() {
    if (closed) {
      throw new IllegalStateException("this Zfs instance is closed");
    }
  }

  /** Closes this instance's descriptor on {@code /dev/zfs}. libzfs_core stays initialised. */
  @Override
  public void close() {
    if (!closed) {
      closed = true;
      ioctls.close();
    }
  }
}
