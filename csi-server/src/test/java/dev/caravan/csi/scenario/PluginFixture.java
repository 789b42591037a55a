package dev.caravan.csi.scenario;

import dev.caravan.csi.Plugin;
import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.IdentityGrpc;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.file.SparseFiles;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.fs.FsType;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.HostRequirements;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

/**
 * A plugin on one {@link TestBackend} (the file backend unless told otherwise) in a private temporary
 * directory, driven over a real unix socket by a real gRPC client. {@link #close()} verifies that the test left none of <em>its own</em> mounts or
 * loop devices behind (cleaning them up if it did) and never touches anything else on the host.
 */
public final class PluginFixture implements AutoCloseable {
  public static final String NODE = "test-node";

  public final TestBackend backend;
  public final Path work;
  public final Path data;
  final Path socket;
  /** Nomad's mount root for this plugin: {@code <state_dir>/csi/monolith/<plugin-id>}. */
  public final Path root;
  private Plugin plugin;
  /** The loop device under the data directory, when it is a filesystem of its own. */
  private static final long DATA_FILESYSTEM_BYTES = 512L << 20;
  private LoopDevice dataFilesystem;
  private FailingRegions failingData;
  /** Adjusts the settings of every plugin this fixture starts (e.g. turns the observe API on). */
  UnaryOperator<Plugin.Settings> customize = UnaryOperator.identity();
  private UnixChannel channel;
  IdentityGrpc.IdentityBlockingStub identity;
  public ControllerGrpc.ControllerBlockingStub controller;
  public NodeGrpc.NodeBlockingStub node;

  private PluginFixture(TestBackend backend, Path work) {
    this.backend = backend;
    this.work = work;
    this.data = work.resolve("data");
    // Nomad's host layout, <state_dir>/csi/plugins/<alloc-id>/csi.sock: the plugin's default allowed
    // root is then <state_dir>/csi, which holds the mount root below.
    this.socket = work.resolve("client/csi/plugins/alloc-1/csi.sock");
    this.root = work.resolve("client/csi/monolith/caravan");
  }

  public static PluginFixture start() throws IOException {
    return start(UnaryOperator.identity());
  }

  /** A plugin on the file backend (its controller side needs neither root nor loop devices). */
  public static PluginFixture start(UnaryOperator<Plugin.Settings> customize) throws IOException {
    PluginFixture f = new PluginFixture(new TestBackend.FileTestBackend(), Files.createTempDirectory("caravan-test-"));
    f.customize = customize;
    f.startPlugin();
    return f;
  }

  /** A plugin on {@code backend}; the calling test is skipped, with the reason, if it cannot run here. */
  public static PluginFixture start(TestBackend backend) throws IOException {
    return start(backend, UnaryOperator.identity());
  }

  public static PluginFixture start(TestBackend backend, UnaryOperator<Plugin.Settings> customize) throws IOException {
    backend.assumeAvailable();
    PluginFixture f = new PluginFixture(backend, Files.createTempDirectory("caravan-test-"));
    f.customize = customize;
    f.startPlugin();
    return f;
  }

  /** A fixture whose plugin the test runs itself (e.g. as a separate process); call {@link #connect()}. */
  public static PluginFixture unstarted() throws IOException {
    return new PluginFixture(new TestBackend.FileTestBackend(), Files.createTempDirectory("caravan-test-"));
  }

  public static PluginFixture unstarted(TestBackend backend) throws IOException {
    backend.assumeAvailable();
    return new PluginFixture(backend, Files.createTempDirectory("caravan-test-"));
  }

  /** The settings a plugin of this fixture runs with (also what a forked plugin process is given). */
  public Plugin.Settings settings() {
    Plugin.Settings base = Plugin.Settings.of(backend.driver(), socket, backend.nodeId(), data);
    return customize.apply(new Plugin.Settings(base.driver(), base.socket(), base.nodeId(), base.dataDir(),
        base.journalDir(), base.pluginName(), base.maxVolumes(), backend.options(work))
        .withKeyCosts(TestBackend.KEY_COSTS));
  }

  public void startPlugin() throws IOException {
    plugin = Plugin.start(settings());
    connect();
  }

  /** Every storage object the backend holds for this fixture, seen without the plugin. */
  public java.util.Set<String> storageObjects() throws IOException {
    return backend.storageObjects(work);
  }

  public void connect() {
    channel = new UnixChannel(socket);
    identity = IdentityGrpc.newBlockingStub(channel.channel());
    controller = ControllerGrpc.newBlockingStub(channel.channel());
    node = NodeGrpc.newBlockingStub(channel.channel());
  }

  public void disconnect() {
    if (channel != null) {
      channel.close();
      channel = null;
    }
  }

  /** Stops the plugin (mounts and devices stay) and starts a fresh one on the same state. */
  public void restart() throws IOException {
    stopPlugin();
    startPlugin();
  }

  public void stopPlugin() {
    disconnect();
    if (plugin != null) {
      plugin.shutdown(Duration.ofSeconds(2));
      plugin = null;
    }
  }

  public Plugin plugin() {
    return plugin;
  }

  public Path dir(String relative) throws IOException {
    return Files.createDirectories(root.resolve(relative));
  }

  /** NodeStageVolume of {@code id} at {@code staging}, as Nomad sends it. */
  void stage(String id, Path staging, VolumeCapability cap) {
    node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setVolumeCapability(cap).build());
  }

  /** NodeStageVolume of {@code v} at {@code staging} with its volume context and {@code secrets}, as Nomad sends it. */
  void stage(Volume v, Path staging, VolumeCapability cap, Map<String, String> secrets) {
    node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(v.getVolumeId())
        .putAllVolumeContext(v.getVolumeContextMap()).setStagingTargetPath(staging.toString())
        .setVolumeCapability(cap).putAllSecrets(secrets).build());
  }

  /** NodePublishVolume of the staged {@code id} at {@code target}. */
  void publish(String id, Path staging, Path target, VolumeCapability cap) {
    node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setTargetPath(target.toString()).setVolumeCapability(cap).build());
  }

  void unpublish(String id, Path target) {
    node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString())
        .build());
  }

  void unstage(String id, Path staging) {
    node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .build());
  }

  /**
   * Stages {@code id} again and publishes it to a fresh target, as the next allocation would, checks that
   * it holds exactly {@code records} intact records ({@link RecordLog}), and unpublishes and unstages it.
   */
  void verifyAfterRestage(String id, Path staging, VolumeCapability cap, long records) throws IOException {
    Path target = dir("per-alloc/verifier").resolve(staging.getFileName());
    stage(id, staging, cap);
    publish(id, staging, target, cap);
    org.assertj.core.api.Assertions.assertThat(RecordLog.read(target.resolve("records")))
        .as("every fsynced record, intact").isEqualTo(new RecordLog.Contents(records, 0));
    unpublish(id, target);
    unstage(id, staging);
  }

  /** Mounts under this fixture's directory, deepest first. */
  public List<MountEntry> ourMounts() {
    return MountTable.read().stream()
        .filter(m -> m.mountPoint().startsWith(work))
        .filter(m -> dataFilesystem == null || !m.mountPoint().equals(data))
        .sorted(Comparator.comparing((MountEntry m) -> m.mountPoint().getNameCount()).reversed())
        .toList();
  }

  /**
   * Puts the data directory on an ext4 filesystem of its own (512 MiB on a loop device), so that a test
   * can freeze the plugin's storage, as a stalled disk would; the node journal moves out of it, since
   * publish writes there. Call before the plugin starts; {@link #close} takes the filesystem down.
   */
  void dataOnAFilesystemOfItsOwn() throws IOException {
    Path image = work.resolve("data.img");
    SparseFiles.create(image, DATA_FILESYSTEM_BYTES);
    dataFilesystem = LoopDevices.attach(image, false);
    mountData(dataFilesystem.device());
  }

  /**
   * As {@link #dataOnAFilesystemOfItsOwn}, with a device-mapper device between the loop device and the
   * filesystem ({@link FailingRegions}, all of it readable for now), through which the test makes some
   * of the filesystem's sectors fail. Needs device-mapper (the guest).
   */
  FailingRegions dataOnAFilesystemThatCanFail() throws IOException {
    Path image = work.resolve("data.img");
    SparseFiles.create(image, DATA_FILESYSTEM_BYTES);
    dataFilesystem = LoopDevices.attach(image, false);
    failingData = FailingRegions.create("cvdata" + Long.toString(ProcessHandle.current().pid(), 36),
        dataFilesystem.device(), DATA_FILESYSTEM_BYTES, List.of());
    mountData(failingData.device());
    return failingData;
  }

  private void mountData(Path device) throws IOException {
    Filesystems.formatIfEmpty(device, FsType.EXT4, List.of());
    Files.createDirectories(data);
    Mounts.mount(device, data, "ext4", Set.of(), "");
    Path journal = work.resolve("journal");
    UnaryOperator<Plugin.Settings> before = customize;
    customize = s -> {
      Plugin.Settings b = before.apply(s);
      return new Plugin.Settings(b.driver(), b.socket(), b.nodeId(), b.dataDir(), journal, b.pluginName(),
          b.maxVolumes(), b.options(), b.observe()).withKeyCosts(b.keyCosts());
    };
  }

  /** Loop devices backed by files in this fixture's data directory. */
  public List<LoopDevice> ourLoops() {
    return LoopDevices.list().stream().filter(l -> l.backingFile().startsWith(data)).toList();
  }

  /** Closes the LUKS2 mappings on this fixture's loop devices (encrypted file volumes), naming each. */
  private List<String> closeOurMappings() throws IOException {
    Path mapper = Path.of("/dev/mapper");
    if (!dev.caravan.storage.HostCapabilities.current().hasDmCrypt() || !Files.isDirectory(mapper)) {
      return List.of();
    }
    List<String> closed = new ArrayList<>();
    List<Path> loops = ourLoops().stream().map(LoopDevice::device).toList();
    try (Stream<Path> names = Files.list(mapper)) {
      for (Path p : names.filter(n -> n.getFileName().toString().startsWith("caravan-")).toList()) {
        String name = p.getFileName().toString();
        var m = dev.caravan.storage.crypt.Luks2.status(name);
        if (m.open() && m.device().filter(loops::contains).isPresent()) {
          closed.add("LUKS2 mapping " + name + " on " + m.device().get());
          dev.caravan.storage.crypt.Luks2.close(name);
        }
      }
    }
    return closed;
  }

  @Override
  public void close() throws IOException {
    stopPlugin();
    List<String> leaks = new ArrayList<>();
    if (HostRequirements.isRoot()) {
      for (MountEntry m : ourMounts()) {
        leaks.add("mount " + m.mountPoint());
        while (MountTable.isMountPoint(m.mountPoint()) && Mounts.unmount(m.mountPoint())) {
          // unwind stacked mounts
        }
      }
      if (Files.exists(Path.of("/dev/loop-control"))) {
        leaks.addAll(closeOurMappings());
        for (LoopDevice l : ourLoops()) {
          leaks.add("loop device " + l.device() + " -> " + l.backingFile());
          LoopDevices.detach(l);
        }
      }
    }
    if (dataFilesystem != null) {
      if (MountTable.isMountPoint(data)) {
        Mounts.unmount(data);
      }
      if (failingData != null) {
        failingData.close();
        failingData = null;
      }
      LoopDevices.detach(dataFilesystem);
      dataFilesystem = null;
    }
    if (ourMounts().isEmpty()) {
      backend.destroyStorage(work);
      try (Stream<Path> paths = Files.walk(work)) {
        for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(p);
        }
      }
    }
    if (!leaks.isEmpty()) {
      throw new AssertionError("the test left its own resources behind (now cleaned up): " + leaks);
    }
  }
}
