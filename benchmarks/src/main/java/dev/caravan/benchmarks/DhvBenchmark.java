package dev.caravan.benchmarks;

import dev.caravan.benchmarks.harness.Ext4Writer;
import dev.caravan.csi.Plugin;
import dev.caravan.csi.cli.UnixChannel;
import dev.caravan.csi.dhv.DhvInstaller;
import dev.caravan.csi.v1.CapacityRange;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.storage.mount.MountTable;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Caravan's DHV plugin as a Nomad client runs it: the installed {@code caravan-file} executable,
 * started with an empty environment plus the {@code DHV_*} variables, its stdout read to the end.
 * {@code fingerprint} is the wrapper alone (Nomad allows 1 s); {@code createDelete} is one volume's
 * whole life through two JVM starts (create: provision a 16 MiB file image, attach, mkfs.ext4,
 * mount; delete: unmount, detach, remove). {@code mkdirBaseline} is what Nomad's built-in
 * {@code mkdir} plugin does for a volume, in process: the floor for any plugin.
 *
 * <p>Publish, and the CSI path for the same volume: {@code deferredPublishUnpublish} is the installed
 * {@code caravan-file-deferred} binding a volume created (and formatted) once to this node and
 * releasing it again (two JVM starts: attach, find the filesystem, mount; unmount, detach).
 * {@code csiStagePublishUnpublishUnstage} is the same work for the same kind of volume through a
 * running plugin's CSI socket (a real gRPC client, the plugin in this JVM, as a {@code caravan serve}
 * daemon would be): NodeStage (attach, mount), NodePublish (bind mount), NodeUnpublish, NodeUnstage.
 * {@code csiCreateStageDelete} is the CSI counterpart of {@code createDelete}: CreateVolume, NodeStage
 * (attach, mkfs.ext4, mount), NodePublish, and back through NodeUnpublish, NodeUnstage, DeleteVolume.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = "--enable-native-access=ALL-UNNAMED")
public class DhvBenchmark {
  private Path work;
  private Path plugin;
  private Path volumes;
  private String nodeId;
  private String deferredId;
  private Path deferredPlugin;
  private Plugin csi;
  private UnixChannel channel;
  private NodeGrpc.NodeBlockingStub node;
  private ControllerGrpc.ControllerBlockingStub controller;
  private Path csiRoot;
  private String csiVolume;
  // java.util.logging holds loggers weakly: keep the one whose level is changed.
  private static final Logger RPC_LOG = Logger.getLogger("dev.caravan.csi.rpc");
  private static final long MIB = 1L << 20;
  private static final VolumeCapability CAP = Ext4Writer.CAPABILITY;

  @Setup(Level.Trial)
  public void setUp() throws IOException {
    Requirements.requireRoot();
    Requirements.requireLoopControl();
    Requirements.requireBinary("mkfs.ext4");
    work = Files.createTempDirectory("caravan-dhv-bench");
    volumes = work.resolve("host_volumes");
    nodeId = UUID.randomUUID().toString();
    String classPath = Stream.of(System.getProperty("java.class.path").split(File.pathSeparator))
        .map(e -> Path.of(e).toAbsolutePath().toString()).reduce((a, b) -> a + File.pathSeparator + b).orElseThrow();
    new DhvInstaller(Path.of(System.getProperty("java.home"), "bin", "java"), classPath, work.resolve("data"), Map.of())
        .install(work.resolve("plugins"), "file");
    plugin = work.resolve("plugins/caravan-file");
    deferredPlugin = work.resolve("plugins/caravan-file-deferred");
    String answer = run("fingerprint", Map.of("DHV_OPERATION", "fingerprint"));
    if (!answer.contains("\"version\"")) {
      throw new IllegalStateException("the installed plugin does not fingerprint: " + answer);
    }
    // One deferred volume, created and formatted once (its first publish runs mkfs).
    deferredId = UUID.randomUUID().toString();
    Map<String, String> create = env("create", deferredId);
    create.put("DHV_CAPACITY_MIN_BYTES", Long.toString(16L << 20));
    create.put("DHV_CAPACITY_MAX_BYTES", "0");
    run(deferredPlugin, "create", create);
    deferredPublishUnpublish();

    // A running plugin with the same backend, for the CSI path; its data and mounts apart from the DHV ones.
    RPC_LOG.setLevel(java.util.logging.Level.WARNING);
    Path socket = work.resolve("csi/client/csi/plugins/alloc-1/csi.sock");
    csiRoot = work.resolve("csi/client/csi/monolith/caravan");
    csi = Plugin.start(Plugin.Settings.of("file", socket, "bench-node", work.resolve("csi/data")));
    channel = new UnixChannel(socket);
    node = NodeGrpc.newBlockingStub(channel.channel());
    controller = ControllerGrpc.newBlockingStub(channel.channel());
    csiVolume = createCsi("bench-formatted");
    stagePublishUnpublishUnstage(csiVolume); // formats it once, as the deferred volume's first publish did
  }

  @TearDown(Level.Trial)
  public void tearDown() throws IOException {
    Map<String, String> delete = env("delete", deferredId);
    delete.put("DHV_CREATED_PATH", "");
    run(deferredPlugin, "delete", delete);
    if (csi != null) {
      controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(csiVolume).build());
      channel.close();
      csi.shutdown(Duration.ofSeconds(2));
    }
    try (Stream<Path> all = Files.walk(work)) {
      for (Path p : (Iterable<Path>) all.sorted(Comparator.reverseOrder())::iterator) {
        Files.deleteIfExists(p);
      }
    }
  }

  @Benchmark
  @Warmup(iterations = 2, time = 2)
  @Measurement(iterations = 5, time = 3)
  public String fingerprint() {
    return run("fingerprint", Map.of("DHV_OPERATION", "fingerprint"));
  }

  @Benchmark
  @Warmup(iterations = 1, time = 5)
  @Measurement(iterations = 4, time = 10)
  public String createDelete() {
    String id = UUID.randomUUID().toString();
    Map<String, String> env = env("create", id);
    env.put("DHV_CAPACITY_MIN_BYTES", Long.toString(16L << 20));
    env.put("DHV_CAPACITY_MAX_BYTES", "0");
    String created = run("create", env);
    if (!created.contains("\"path\"")) {
      throw new IllegalStateException("create failed: " + created);
    }
    Map<String, String> del = env("delete", id);
    del.put("DHV_CREATED_PATH", volumes.resolve(id).toString());
    return created + run("delete", del);
  }

  @Benchmark
  @Warmup(iterations = 2, time = 2)
  @Measurement(iterations = 5, time = 3)
  public boolean mkdirBaseline() throws IOException {
    Path dir = volumes.resolve(UUID.randomUUID().toString());
    Files.createDirectories(dir);
    return Files.deleteIfExists(dir);
  }

  @Benchmark
  @Warmup(iterations = 1, time = 5)
  @Measurement(iterations = 4, time = 10)
  public String deferredPublishUnpublish() {
    Map<String, String> publish = env("publish", deferredId);
    publish.put("DHV_ALLOC_ID", UUID.randomUUID().toString());
    publish.put("DHV_ACCESS_MODE", "single-node-writer");
    publish.put("DHV_ATTACHMENT_MODE", "file-system");
    publish.put("DHV_READ_ONLY", "false");
    String published = run(deferredPlugin, "publish", publish);
    if (!MountTable.isMountPoint(volumes.resolve(deferredId))) {
      throw new IllegalStateException("publish mounted nothing: " + published);
    }
    Map<String, String> unpublish = env("unpublish", deferredId);
    unpublish.put("DHV_ALLOC_ID", publish.get("DHV_ALLOC_ID"));
    return published + run(deferredPlugin, "unpublish", unpublish);
  }

  @Benchmark
  @Warmup(iterations = 2, time = 3)
  @Measurement(iterations = 5, time = 5)
  public String csiStagePublishUnpublishUnstage() {
    return stagePublishUnpublishUnstage(csiVolume);
  }

  @Benchmark
  @Warmup(iterations = 1, time = 5)
  @Measurement(iterations = 4, time = 10)
  public String csiCreateStageDelete() {
    String id = createCsi("bench-" + UUID.randomUUID());
    stagePublishUnpublishUnstage(id);
    controller.deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build());
    return id;
  }

  private String createCsi(String name) {
    return controller.createVolume(CreateVolumeRequest.newBuilder().setName(name).addVolumeCapabilities(CAP)
        .setCapacityRange(CapacityRange.newBuilder().setRequiredBytes(16 * MIB)).build()).getVolume().getVolumeId();
  }

  /** Nomad's sequence for one allocation: stage, publish, and back; the paths in Nomad's host layout. */
  private String stagePublishUnpublishUnstage(String id) {
    Path staging = csiRoot.resolve("staging/default/" + id + "/" + Ext4Writer.USAGE);
    Path target = csiRoot.resolve("per-alloc/alloc-1/" + id + "/" + Ext4Writer.USAGE);
    try {
      Files.createDirectories(staging);
      Files.createDirectories(target.getParent());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    node.nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(staging.toString())
        .setVolumeCapability(CAP).build());
    node.nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(
        staging.toString()).setTargetPath(target.toString()).setVolumeCapability(CAP).build());
    if (!MountTable.isMountPoint(target)) {
      throw new IllegalStateException("NodePublishVolume mounted nothing at " + target);
    }
    node.nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id).setTargetPath(target.toString())
        .build());
    node.nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id).setStagingTargetPath(
        staging.toString()).build());
    return id;
  }

  private Map<String, String> env(String op, String volumeId) {
    Map<String, String> env = new LinkedHashMap<>();
    env.put("DHV_OPERATION", op);
    env.put("DHV_VOLUMES_DIR", volumes.toString());
    env.put("DHV_PLUGIN_DIR", plugin.getParent().toString());
    env.put("DHV_NODE_POOL", "default");
    env.put("DHV_NAMESPACE", "default");
    env.put("DHV_VOLUME_NAME", "bench");
    env.put("DHV_VOLUME_ID", volumeId);
    env.put("DHV_NODE_ID", nodeId);
    env.put("DHV_PARAMETERS", "null");
    return env;
  }

  private String run(String op, Map<String, String> env) {
    return run(plugin, op, env);
  }

  private String run(Path executable, String op, Map<String, String> env) {
    ProcessBuilder pb = new ProcessBuilder(executable.toString(), op)
        .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
        .redirectError(ProcessBuilder.Redirect.DISCARD);
    pb.environment().clear();
    pb.environment().putAll(env);
    try {
      Process p = pb.start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (p.waitFor() != 0) {
        throw new IllegalStateException(op + " exited with " + p.exitValue() + ": " + out);
      }
      return out;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
