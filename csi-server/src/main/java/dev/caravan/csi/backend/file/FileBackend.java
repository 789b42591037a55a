package dev.caravan.csi.backend.file;

import dev.caravan.csi.backend.BackendHalves;
import dev.caravan.csi.backend.BackendObject;
import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.LuksMapping;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.backend.Readiness;
import dev.caravan.csi.backend.file.Records.SnapshotRecord;
import dev.caravan.csi.backend.file.Records.VolumeRecord;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.file.SparseFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import dev.caravan.storage.crypt.KeySlotCost;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/** The {@code file} backend: sparse files under a data directory, attached through loop devices. */
public final class FileBackend extends BackendHalves {
  private static final System.Logger LOG = System.getLogger(FileBackend.class.getName());
  /** The CreateVolume parameters this backend takes; any other is refused, naming these. */
  public static final Set<String> PARAMETERS = FileController.PARAMETERS;

  public static final Path DEFAULT_DATA_DIR = Path.of("/var/lib/caravan/file");

  private final FileStore store;

  /** Option: whether new volume and snapshot ids name their node ({@code file.node-scoped-ids=true}). */
  public static final String NODE_SCOPED_IDS = "node-scoped-ids";

  private FileBackend(
      FileStore store, String nodeId, NodeUsage usage, boolean nodeScopedIds, KeySlotCost keySlotCost) {
    super("file", new FileController(store, nodeId, usage, nodeScopedIds), new FileNode(store, keySlotCost));
    this.store = store;
  }

  public static FileBackend open(BackendConfig config) {
    String scoped = config.options().getOrDefault(NODE_SCOPED_IDS, "false");
    if (!scoped.equals("true") && !scoped.equals("false")) {
      throw new IllegalArgumentException("file." + NODE_SCOPED_IDS + " must be true or false, not '" + scoped + "'");
    }
    FileStore store = new FileStore(config.dataDir());
    // A plugin that died during a snapshot or clone left that volume's filesystem frozen.
    new Freezes(store).thawLeftovers()
        .forEach(line -> LOG.log(System.Logger.Level.WARNING, "file: {0}", line));
    return new FileBackend(store, config.nodeId(), config.nodeUsage(), Boolean.parseBoolean(scoped),
        config.keyCosts().luks());
  }

  @Override
  public Readiness readiness() {
    if (!Files.isDirectory(store.dataDir()) || !Files.isWritable(store.dataDir())) {
      return Readiness.notReady("data directory " + store.dataDir() + " is missing or not writable");
    }
    if (!Files.exists(Path.of("/dev/loop-control"))) {
      return Readiness.notReady("/dev/loop-control is missing: no loop device support");
    }
    return Readiness.ready("data directory " + store.dataDir());
  }

  /**
   * Readiness is two stats and an access(2) in the data directory; health a stat of the backing file
   * and one loop ioctl. Neither reads a device (a data directory on a network filesystem would break
   * this, and loop devices on one are not a setup this backend supports).
   */
  @Override
  public boolean answersWithoutWaiting() {
    return true;
  }

  @Override
  public BackendObject describe(String volumeId) {
    Path image = store.volumeImage(volumeId);
    Map<String, String> props = new TreeMap<>();
    Optional<VolumeRecord> record = store.readVolume(volumeId);
    record.ifPresent(r -> {
      props.put("record.state", r.state().name());
      props.put("record.name", r.name());
      props.put("record.sizeBytes", Long.toString(r.sizeBytes()));
      props.put("record.fsType", r.fsType());
      props.put("record.createdAt", r.createdAt().toString());
      props.put("encrypted", r.encrypted() ? "yes" : "no");
      r.source().ifPresent(src -> props.put("record.source", src.kind().name().toLowerCase(Locale.ROOT) + ":" + src.id()));
    });
    boolean exists = Files.exists(image, LinkOption.NOFOLLOW_LINKS);
    Optional<Path> device = Optional.empty();
    if (exists) {
      try {
        props.put("image.sizeBytes", Long.toString(Files.size(image)));
        props.put("image.allocatedBytes", Long.toString(SparseFiles.allocatedBytes(image)));
      } catch (IOException | RuntimeException e) {
        props.put("image.error", String.valueOf(e.getMessage()));
      }
      try {
        device = LoopDevices.find(image).map(LoopDevice::device);
      } catch (RuntimeException e) { // a vanished image or an unreadable loop status: evidence, not failure
        props.put("loop.error", String.valueOf(e.getMessage()));
      }
    }
    if (!exists) {
      device = loopOfDeletedImage(image);
      device.ifPresent(d -> props.put("loop.backingFile", image + " (deleted)"));
    }
    // An encrypted volume's device is its LUKS2 mapping, open over the loop device: what the journal
    // records and the filesystem is mounted from. Its state is shown, never anything of its key.
    if (record.map(VolumeRecord::encrypted).orElse(false)) {
      LuksMapping mapping = store.mapping(volumeId);
      Map<String, String> luks = mapping.evidence();
      props.putAll(luks);
      try {
        if ("yes".equals(luks.get("luks2.open")) && device.isPresent()
            && mapping.isOpenOn(d -> LoopDevices.backs(d, image))) {
          device = Optional.of(mapping.path());
        }
      } catch (RuntimeException e) { // a loop device that went away meanwhile: evidence, not failure
        props.put("luks2.error", String.valueOf(e.getMessage()));
      }
    }
    if (Files.exists(FileStore.partial(image), LinkOption.NOFOLLOW_LINKS)) {
      props.put("image.partial", FileStore.partial(image).toString());
    }
    return new BackendObject("file", Optional.of(image.toString()), exists, props,
        store.snapshots().stream().filter(sn -> sn.sourceVolumeId().equals(volumeId)).map(SnapshotRecord::id).toList(),
        device);
  }

  /** A loop device still mapping {@code image} after the file was deleted (sysfs shows "(deleted)"). */
  private static Optional<Path> loopOfDeletedImage(Path image) {
    Path wanted = Path.of(image + " (deleted)");
    return LoopDevices.list().stream().filter(d -> d.backingFile().equals(wanted)).map(LoopDevice::device).findFirst();
  }
}
