package dev.caravan.csi.scenario;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.csi.backend.KeyCosts;
import dev.caravan.csi.backend.qnap.SimulatedAppliance;
import dev.caravan.csi.testing.GuestCommands;
import dev.caravan.storage.HostCapabilities;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.crypt.KeySlotCost;
import dev.caravan.storage.crypt.Luks2;
import dev.caravan.storage.crypt.Mapping;
import dev.caravan.storage.testing.GuestIscsi;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.zfs.Pbkdf2Iters;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * A backend the conformance suites run on, with an oracle that sees its storage without going through
 * the plugin. One suite, every backend: a suite is an abstract class {@code XxxConformance} whose
 * tests start their plugin with {@code PluginFixture.start(backend())}, and each backend gets a
 * two-line subclass, {@code XxxConformanceOnFileTest} (runs on the host) and {@code
 * XxxConformanceOnLocalTest} (real OpenZFS: {@code scripts/guest-suite} runs every {@code *OnLocalTest}
 * in the guest; on the host its tests are skipped, each naming the reason).
 */
public abstract class TestBackend {
  public static TestBackend file() {
    return new FileTestBackend();
  }

  /**
   * The file backend with {@code encryption=on}: every volume a scene makes is LUKS2 on its loop device,
   * under {@link #ENCRYPTION_PASSPHRASE}. Needs dm-crypt (the guest).
   */
  public static TestBackend fileEncrypted() {
    return new FileTestBackend(true);
  }

  /**
   * The key costs every test plugin runs with: the least each mechanism accepts through serve's flags
   * ({@code --luks-iter-time=1}, {@code --luks-pbkdf-memory=32}, {@code --zfs-pbkdf2-iters=100000}).
   * What the tests check does not depend on it, and under emulation the defaults cost seconds per
   * format, create and stage; host-storage's {@code Luks2Test} and {@code ZfsEncryptionGuestTest}
   * check the defaults.
   */
  public static final KeyCosts KEY_COSTS = KeyCosts.DEFAULT
      .withLuksIterTime(KeySlotCost.MIN_ITER_TIME_MS)
      .withLuksPbkdfMemory(KeySlotCost.MIN_MEMORY_KIB)
      .withZfs(new Pbkdf2Iters(Pbkdf2Iters.MINIMUM));

  /** The passphrase of the encrypted test backends' volumes. */
  public static final String ENCRYPTION_PASSPHRASE = "kill-matrix-passphrase-Zq9";

  /** Whether volumes are made with {@code encryption=on} and staged with the passphrase. */
  public boolean encrypted() {
    return false;
  }

  public static TestBackend local() {
    return new LocalTestBackend(LocalTestBackend.POOL);
  }

  /** The local backend on {@code pool} alone, a pool the calling test made (and must destroy) itself. */
  public static TestBackend local(String pool) {
    return new LocalTestBackend(pool);
  }

  static TestBackend qnap() {
    return new QnapTestBackend(false);
  }

  /** qnap with real LIO targets behind the simulator, and the node side on open-iscsi and multipathd (the guest). */
  public static TestBackend qnapOnLio() {
    return new QnapTestBackend(true);
  }

  public abstract String driver();

  /** Why this backend cannot run on this machine; empty when it can. */
  public abstract Optional<String> missing();

  /** Skips the calling test, with the reason, when this backend cannot run here. */
  public final void assumeAvailable() {
    Optional<String> why = missing();
    assumeTrue(why.isEmpty(), () -> "the " + driver() + " backend " + why.orElse(""));
  }

  /** Backend options for a plugin whose state lives under {@code work}. */
  public abstract Map<String, String> options(Path work);

  /**
   * Every storage object the backend holds for {@code work}, as the backend names them (image and
   * metadata files under the data directory; datasets and snapshots below the parent dataset).
   */
  abstract Set<String> storageObjects(Path work) throws IOException;

  /** The size of the storage behind {@code volumeId}, read without the plugin (image file, volsize). */
  public abstract long storedSize(Path work, String volumeId) throws IOException;

  /**
   * Devices the plugin attached for {@code work} and must detach again (loop devices over its images);
   * empty for a backend whose devices exist as long as the volume does (zvols).
   */
  public abstract Set<String> attachedDevices(Path work);

  /**
   * What this node and the storage still hold of a volume that was unstaged and deleted, described one
   * object a line; empty for a backend whose node objects the fixture sees itself (mounts, loop devices).
   */
  List<String> leftoversOf(Path work, Map<String, String> volumeContext) {
    return List.of();
  }

  /**
   * The volumes of {@code work} whose key is open on this node, seen without the plugin: a loaded ZFS
   * key (local), an open LUKS2 mapping on a loop device over the volume's image (file); empty for a
   * backend that does not encrypt.
   */
  public Set<String> volumesWithOpenKeys(Path work) throws IOException {
    return Set.of();
  }

  /** A volume id this backend could have issued for {@code work}, of a volume that does not exist. */
  public abstract String absentVolumeId(Path work);

  /** A snapshot id this backend could have issued for {@code work}, of a snapshot that does not exist. */
  public abstract String absentSnapshotId(Path work);

  /** Removes whatever the backend still holds for {@code work} (after the plugin has stopped). */
  abstract void destroyStorage(Path work) throws IOException;

  /** A volume size that every filesystem the tests use fits in (xfs needs 300 MiB). */
  public long sizeFor(String fsType) {
    return "xfs".equals(fsType) ? 320L << 20 : 64L << 20;
  }

  /** CreateVolume parameters that make a volume take no space up front (file images always are sparse). */
  public Map<String, String> sparseParameters() {
    return Map.of();
  }

  /**
   * A sparse volume size whose first ext4 format takes this backend noticeably longer than a bind
   * mount (mkfs writes metadata and a journal that grow with the filesystem); tests take less when
   * GetCapacity reports less room.
   */
  abstract long slowFormatBytes();

  /**
   * The quantum of volume sizes on this backend: sizes the suites ask for are multiples of it. The
   * file and local backends size in MiB (and round up to it); a QNAP LUN is whole GiB.
   */
  public long sizeUnit() {
    return 1L << 20;
  }

  /** Whether the backend rounds a size up to its unit (file, local); qnap refuses a size that is not whole GiB. */
  boolean roundsSizes() {
    return true;
  }

  /** Whether volumes are tied to the node that made them (a {@code caravan.csi/node} topology and context key). */
  boolean nodeLocal() {
    return true;
  }

  /** Whether ControllerPublish is the backend's fence (qnap); the others answer UNIMPLEMENTED. */
  public boolean publishes() {
    return false;
  }

  /** Whether NodeStage needs the volume context CreateVolume returned (as Nomad always sends it). */
  boolean stageNeedsContext() {
    return false;
  }

  /** Why this machine cannot stage this backend's volumes; empty when it can. */
  Optional<String> nodeSideMissing() {
    return Optional.empty();
  }

  /** Skips the calling test, with the reason, when this machine cannot stage this backend's volumes. */
  public final void assumeNodeSide() {
    Optional<String> why = nodeSideMissing();
    assumeTrue(why.isEmpty(), () -> "the " + driver() + " backend " + why.orElse(""));
  }

  /**
   * A size the node suites name in MiB (multiples of 32 MiB), as this backend can make it: itself on
   * file and local; qnap, which sizes in whole GiB, makes each 32 MiB one GiB.
   */
  long scaled(long bytes) {
    return bytes;
  }

  /** The node id a plugin of this backend runs with. */
  public String nodeId() {
    return PluginFixture.NODE;
  }

  @Override
  public String toString() {
    return driver();
  }

  /** Sparse image files under the data directory, attached through loop devices. */
  static final class FileTestBackend extends TestBackend {
    private final boolean encrypted;

    FileTestBackend() {
      this(false);
    }

    FileTestBackend(boolean encrypted) {
      this.encrypted = encrypted;
    }

    @Override
    public String driver() {
      return "file";
    }

    @Override
    public boolean encrypted() {
      return encrypted;
    }

    @Override
    public Optional<String> missing() {
      return encrypted
          ? HostRequirements.whyNoLoopAndExt4().or(HostRequirements::whyNoDmCrypt)
          : HostRequirements.whyNoLoopAndExt4();
    }

    @Override
    public Map<String, String> options(Path work) {
      return Map.of();
    }

    @Override
    Set<String> storageObjects(Path work) throws IOException {
      Path data = work.resolve("data");
      if (!Files.exists(data)) {
        return Set.of();
      }
      try (Stream<Path> s = Files.walk(data)) {
        return s.filter(Files::isRegularFile)
            .filter(p -> !p.startsWith(data.resolve("node")))
            .map(p -> data.relativize(p).toString())
            .collect(Collectors.toCollection(TreeSet::new));
      }
    }

    @Override
    public long storedSize(Path work, String volumeId) throws IOException {
      return Files.size(work.resolve("data/volumes").resolve(volumeId + ".img"));
    }

    @Override
    public Set<String> attachedDevices(Path work) {
      Path data = work.resolve("data");
      return LoopDevices.list().stream()
          .filter(l -> l.backingFile().startsWith(data))
          .map(l -> l.device() + " -> " + l.backingFile())
          .collect(Collectors.toCollection(TreeSet::new));
    }

    @Override
    long slowFormatBytes() {
      return 64L << 30;
    }

    /** Open mappings named {@code caravan-*} whose device is a loop device over an image of {@code work}. */
    @Override
    public Set<String> volumesWithOpenKeys(Path work) throws IOException {
      Path mapper = Path.of("/dev/mapper");
      if (!HostCapabilities.current().hasDmCrypt() || !Files.isDirectory(mapper)) {
        return Set.of();
      }
      Path volumes = work.resolve("data/volumes");
      Map<Path, Path> loops = LoopDevices.list().stream().filter(l -> l.backingFile().startsWith(volumes))
          .collect(Collectors.toMap(LoopDevice::device, LoopDevice::backingFile, (a, b) -> a));
      Set<String> ids = new TreeSet<>();
      try (Stream<Path> names = Files.list(mapper)) {
        for (Path p : names.filter(n -> n.getFileName().toString().startsWith("caravan-")).toList()) {
          Mapping m = Luks2.status(p.getFileName().toString());
          Optional<Path> image = m.open() ? m.device().map(loops::get) : Optional.empty();
          image.ifPresent(i -> ids.add(i.getFileName().toString().replaceFirst("\\.img$", "")));
        }
      }
      return ids;
    }

    @Override
    public String absentVolumeId(Path work) {
      return "vol-absent-0123456789ab";
    }

    @Override
    public String absentSnapshotId(Path work) {
      return "snap-absent-0123456789ab";
    }

    @Override
    void destroyStorage(Path work) {
      // The fixture deletes the work directory, which holds every image.
    }
  }

  /**
   * Zvols below a parent dataset of their own ({@code <pool>/ct-<work dir>}) in the pool that
   * {@code scripts/guest-test} creates, or in one a test made; the {@code zfs} command is used only as
   * the oracle here.
   */
  static final class LocalTestBackend extends TestBackend {
    static final String POOL = System.getenv().getOrDefault("CARAVAN_TEST_POOL", "caravan-test");

    private final String pool;

    LocalTestBackend(String pool) {
      this.pool = pool;
    }

    @Override
    public String driver() {
      return "local";
    }

    @Override
    public Optional<String> missing() {
      return HostRequirements.whyNoZfs();
    }

    /** Short, so that ids of long volume names stay within CSI's 128 bytes. */
    static String parent(Path work) {
      String name = work.getFileName().toString().replaceAll("[^A-Za-z0-9]", "").toLowerCase(Locale.ROOT);
      return "ct-" + name.substring(Math.max(0, name.length() - 10));
    }

    /** The parent dataset in the shared test pool ({@link #POOL}). */
    static String parentDataset(Path work) {
      return POOL + "/" + parent(work);
    }

    private String parentIn(Path work) {
      return pool + "/" + parent(work);
    }

    @Override
    public Map<String, String> options(Path work) {
      return Map.of("pools", pool, "parent-dataset", parent(work), "device-wait-seconds", "60");
    }

    @Override
    Set<String> storageObjects(Path work) {
      String out = Zfs.run("zfs", "list", "-H", "-o", "name", "-t", "all", "-r", parentIn(work));
      TreeSet<String> names = new TreeSet<>(out.isEmpty() ? List.of() : List.of(out.split("\n")));
      names.remove(parentIn(work));
      return names;
    }

    /** The zvol's dataset: the id is {@code local/v1/<node>/<dataset>}. */
    static String dataset(String volumeId) {
      String rest = volumeId.substring("local/v1/".length());
      return rest.substring(rest.indexOf('/') + 1);
    }

    @Override
    public long storedSize(Path work, String volumeId) {
      return Long.parseLong(Zfs.run("zfs", "get", "-Hp", "-o", "value", "volsize", dataset(volumeId)));
    }

    @Override
    public Set<String> attachedDevices(Path work) {
      return Set.of();
    }

    /** Zvols below the parent dataset whose {@code keystatus} is {@code available}, by their volume id. */
    @Override
    public Set<String> volumesWithOpenKeys(Path work) {
      // zfs list, which the oracle reads as nothing when the parent dataset is not there (yet, or any more)
      String out = Zfs.run("zfs", "list", "-H", "-o", "name,keystatus", "-t", "volume", "-r", parentIn(work));
      Set<String> ids = new TreeSet<>();
      for (String line : out.isEmpty() ? List.<String>of() : List.of(out.split("\n", -1))) {
        String[] f = line.split("\t", -1);
        if (f.length == 2 && f[1].equals("available")) {
          ids.add("local/v1/" + nodeId() + "/" + f[0]);
        }
      }
      return ids;
    }

    @Override
    public Map<String, String> sparseParameters() {
      return Map.of("sparse", "true");
    }

    /** Smaller than the file backend's: every block mkfs writes goes through ZFS under an emulated CPU. */
    @Override
    long slowFormatBytes() {
      return 16L << 30;
    }

    @Override
    public String absentVolumeId(Path work) {
      return "local/v1/" + PluginFixture.NODE + "/" + parentIn(work) + "/vol-absent-0123456789ab";
    }

    @Override
    public String absentSnapshotId(Path work) {
      return absentVolumeId(work) + "@snap-absent-0123456789ab";
    }

    @Override
    void destroyStorage(Path work) {
      if (!Zfs.run("zfs", "list", "-H", "-o", "name", parentIn(work)).isEmpty()) {
        Zfs.run("zfs", "destroy", "-r", parentIn(work));
      }
    }
  }

  /**
   * LUNs on an in-process {@link SimulatedAppliance} (one per work directory, stopped with its
   * storage); the node id is an initiator name, as the qnap backend requires. Sizes are whole GiB.
   */
  static final class QnapTestBackend extends TestBackend {
    static final String INITIATOR = "iqn.2026-01.dev.caravan.test:test-node";
    /** The guest's two portals (host-storage's GuestIscsi): two addresses, so two paths per LUN. */
    static final List<String> LIO_PORTALS = List.of("127.0.0.1:3260", "127.0.0.2:3260");
    private static final java.util.concurrent.ConcurrentMap<Path, SimulatedAppliance> APPLIANCES =
        new java.util.concurrent.ConcurrentHashMap<>();

    private final boolean lio;
    /** A second node's backend: the appliance of this work directory, its own node id and iSCSI interface. */
    private final Optional<Path> shared;
    private final Optional<String> node;
    private final Optional<String> iface;

    QnapTestBackend(boolean lio) {
      this(lio, Optional.empty(), Optional.empty(), Optional.empty());
    }

    private QnapTestBackend(boolean lio, Optional<Path> shared, Optional<String> node, Optional<String> iface) {
      this.lio = lio;
      this.shared = shared;
      this.node = node;
      this.iface = iface;
    }

    /**
     * Another node on the appliance of {@code work} (the first node's fixture owns and closes it): node id
     * {@code nodeId}, logging in through the open-iscsi interface {@code iface} (qnap.iscsi-iface).
     */
    QnapTestBackend secondNode(Path work, String nodeId, String iface) {
      return new QnapTestBackend(lio, Optional.of(work), Optional.of(nodeId), Optional.of(iface));
    }

    /** Another plugin on the appliance of {@code work} with node id {@code nodeId}: a second controller instance. */
    QnapTestBackend secondNode(Path work, String nodeId) {
      return new QnapTestBackend(lio, Optional.of(work), Optional.of(nodeId), Optional.empty());
    }

    @Override
    public String driver() {
      return "qnap";
    }

    /**
     * On LIO: the guest's iSCSI world, started through host-storage's GuestIscsi, which loads LIO,
     * iscsi_tcp and dm-multipath and starts iscsid and multipathd.
     */
    @Override
    public Optional<String> missing() {
      if (!lio) {
        return Optional.empty();
      }
      Optional<String> why = HostRequirements.whyNoIscsi();
      if (why.isPresent()) {
        return why.map(w -> "on LIO " + w);
      }
      GuestIscsi.assumeAvailable();
      return Optional.empty();
    }

    SimulatedAppliance appliance(Path work) {
      return APPLIANCES.computeIfAbsent(work, w -> {
        try {
          SimulatedAppliance a = SimulatedAppliance.start(w);
          return lio ? a.withLio(w.resolve("lio"), LIO_PORTALS) : a;
        } catch (IOException e) {
          throw new java.io.UncheckedIOException(e);
        }
      });
    }

    @Override
    public Map<String, String> options(Path work) {
      try {
        return appliance(shared.orElse(work)).options(lio ? LIO_PORTALS : List.of("192.0.2.10:3260", "192.0.2.11:3260"),
            iface.map(i -> Map.of("iscsi-iface", i)).orElse(Map.of()));
      } catch (IOException e) {
        throw new java.io.UncheckedIOException(e);
      }
    }

    @Override
    Set<String> storageObjects(Path work) {
      SimulatedAppliance a = APPLIANCES.get(shared.orElse(work));
      return a == null ? Set.of() : a.objects();
    }

    @Override
    public long storedSize(Path work, String volumeId) {
      return appliance(shared.orElse(work)).lunBytes(volumeId);
    }

    @Override
    public Set<String> attachedDevices(Path work) {
      return Set.of();
    }

    /**
     * On LIO: the iSCSI sessions and node records of the volume's target, the multipath map of its WWID
     * and an encrypted volume's LUKS2 mapping on it, the LIO target in configfs and the loop devices over the LUN files; the simulator alone has none.
     */
    @Override
    List<String> leftoversOf(Path work, Map<String, String> volumeContext) {
      if (!lio) {
        return List.of();
      }
      String iqn = volumeContext.get("targetIqn");
      String wwid = "3" + volumeContext.get("naa");
      List<String> left = new java.util.ArrayList<>();
      dev.caravan.storage.iscsi.Iscsi iscsi = dev.caravan.storage.iscsi.Iscsi.system();
      iscsi.sessions().stream().filter(s -> s.target().equals(iqn)).forEach(s -> left.add("iSCSI session " + s));
      iscsi.nodes().stream().filter(r -> r.target().equals(iqn)).forEach(r -> left.add("node record " + r));
      dev.caravan.storage.multipath.Multipath.system().maps().stream().filter(m -> m.wwid().value().equals(wwid))
          .forEach(m -> left.add("multipath map " + m.name() + " of WWID " + wwid));
      if (dev.caravan.storage.crypt.Luks2.unavailableReason().isEmpty()) {
        String mapping = dev.caravan.storage.crypt.Luks2.mappingName("caravan-qnap:" + wwid);
        if (dev.caravan.storage.crypt.Luks2.status(mapping).open()) {
          left.add("LUKS2 mapping " + mapping + " of WWID " + wwid);
        }
      }
      Path target = Path.of("/sys/kernel/config/target/iscsi").resolve(iqn);
      if (Files.exists(target)) {
        left.add("LIO target " + target);
      }
      Path files = shared.orElse(work).resolve("lio");
      LoopDevices.list().stream().filter(l -> l.backingFile().startsWith(files))
          .forEach(l -> left.add("loop device " + l.device() + " over LUN file " + l.backingFile()));
      return left;
    }

    @Override
    public String absentVolumeId(Path work) {
      return "qnap/v1/cvem-absent-0123456789ab";
    }

    @Override
    public String absentSnapshotId(Path work) {
      return absentVolumeId(work) + "@cs-absent-0123456789ab";
    }

    @Override
    void destroyStorage(Path work) {
      if (shared.isPresent()) {
        return; // the first node's fixture stops the appliance
      }
      SimulatedAppliance a = APPLIANCES.remove(work);
      if (a != null) {
        a.close();
      }
    }

    @Override
    public long sizeFor(String fsType) {
      return 1L << 30;
    }

    @Override
    long slowFormatBytes() {
      return 16L << 30;
    }

    @Override
    public long sizeUnit() {
      return 1L << 30;
    }

    @Override
    boolean roundsSizes() {
      return false;
    }

    @Override
    boolean nodeLocal() {
      return false;
    }

    @Override
    public boolean publishes() {
      return true;
    }

    /** On LIO, this host's initiator name: the ACL admits it, so it must be the node id. */
    @Override
    public String nodeId() {
      if (node.isPresent()) {
        return node.get();
      }
      return lio ? dev.caravan.storage.iscsi.Iscsi.system().initiatorName() : INITIATOR;
    }

    @Override
    boolean stageNeedsContext() {
      return true;
    }

    @Override
    Optional<String> nodeSideMissing() {
      return lio ? Optional.empty() : Optional.of("on the simulator alone has no iSCSI target to stage from: the"
          + " node side runs on LIO in the guest (NodeConformanceOnQnapTest)");
    }

    @Override
    long scaled(long bytes) {
      return bytes * 32;
    }
  }

  /** The {@code zfs} command as an oracle: output, or "" when {@code zfs list} finds nothing. */
  static final class Zfs {
    private Zfs() {}

    static String run(String... command) {
      return GuestCommands.run(command);
    }

    /** {@code zfs get -Hp -o value <property> <dataset>}. */
    static String get(String property, String dataset) {
      return run("zfs", "get", "-Hp", "-o", "value", property, dataset);
    }
  }
}
