package dev.caravan.csi.scenario.model;

import static io.grpc.Status.Code.ABORTED;
import static io.grpc.Status.Code.INVALID_ARGUMENT;
import static io.grpc.Status.Code.NOT_FOUND;
import static io.grpc.Status.Code.OK;
import static io.grpc.Status.Code.UNAVAILABLE;

import dev.caravan.csi.dhv.DhvEnv;
import dev.caravan.csi.dhv.DhvInstaller;
import dev.caravan.csi.dhv.NomadDhvRunner;
import dev.caravan.csi.scenario.Caps;
import dev.caravan.csi.scenario.ForkedPlugin;
import dev.caravan.csi.scenario.PluginFixture;
import dev.caravan.csi.scenario.RecordLog;
import dev.caravan.csi.support.CrashPoints;
import dev.caravan.csi.testing.TestClassPath;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.ControllerExpandVolumeResponse;
import dev.caravan.csi.v1.ControllerGrpc;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.ControllerUnpublishVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.NodeExpandVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsResponse;
import dev.caravan.csi.v1.NodeGrpc;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.Volume;
import dev.caravan.csi.v1.VolumeCapability.AccessMode.Mode;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeContentSource;
import dev.caravan.csi.v1.VolumeUsage;
import dev.caravan.storage.testing.HostRequirements;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * Carries out {@link ModelStep}s on a real plugin through its real socket (and, for a step with a
 * crash point, on a {@code caravan serve} process armed to die there), checks each answer's code
 * against {@link ModelSpec}, and updates the {@link ModelState} by what answered OK.
 */
final class ModelDriver implements AutoCloseable {
  /** How long one call may take before the run calls it hung (mkfs and ZFS under TCG are slow). */
  private static final long CALL_SECONDS = 600;
  /** The target number VERIFY publishes at: above any the generator uses. */
  static final int VERIFY_TARGET = 9;

  /**
   * The two passphrases of a run ({@link ModelStep.Secret}): steps name them by role only, and every
   * message the model prints goes through {@link ModelFailure#redact}, so neither appears in a report.
   */
  private static final String KEY = "model-run-passphrase-Tq83";
  private static final String OTHER_KEY = "another-model-passphrase-Wz51";

  final PluginFixture f;
  final ModelState m;
  /** Absolute paths outside every allowed root that bad requests name; nothing may appear there. */
  final Path outside;
  private final DhvEnv.Node dhvNode;
  private final long baseBytes;
  private final long growBytes;
  private ForkedPlugin forked;
  /** What a run did with encrypted volumes, by what and how it answered: printed after the run. */
  final Map<String, Integer> encryptionCoverage = new java.util.TreeMap<>();
  private String crash = "";
  private int generation;

  ModelDriver(PluginFixture f, ModelGenerator.Options options) throws IOException {
    boolean dhv = options.dhv();
    this.f = f;
    this.m = new ModelState(ModelState.Crypto.of(f.backend.driver(),
        options.encryption() == ModelGenerator.Encryption.ON));
    this.outside = Files.createTempDirectory("caravan-model-outside-");
    this.baseBytes = f.backend.sizeFor("ext4");
    this.growBytes = Math.max(f.backend.sizeUnit(), 16L << 20);
    if (dhv) {
      Path plugins = f.work.resolve("dhv/plugins");
      new DhvInstaller(Path.of(System.getProperty("java.home"), "bin", "java"), TestClassPath.of(), f.data,
          f.backend.options(f.work)).install(plugins, f.backend.driver());
      dhvNode = new DhvEnv.Node(UUID.nameUUIDFromBytes(f.work.toString().getBytes(StandardCharsets.UTF_8)).toString(),
          f.work.resolve("dhv/host_volumes"), plugins);
    } else {
      dhvNode = null;
    }
  }

  long baseBytes() {
    return baseBytes;
  }

  private void cover(String what) {
    encryptionCoverage.merge(what, 1, Integer::sum);
  }

  /** How a step's passphrase stands to the volume's: right, wrong or none. */
  private static String role(ModelState.Vol v, ModelStep.Secret s) {
    return s == ModelStep.Secret.NONE ? "no passphrase" : s == rightKey(v) ? "its passphrase" : "a wrong passphrase";
  }

  /** The passphrase {@code s} stands for; null for NONE. */
  static String passphrase(ModelStep.Secret s) {
    return switch (s) {
      case NONE -> null;
      case KEY -> KEY;
      case OTHER_KEY -> OTHER_KEY;
    };
  }

  /** Every passphrase a run uses, for the checks that none of them leaks. */
  static List<String> passphrases() {
    return List.of(KEY, OTHER_KEY);
  }

  /** The secrets map a request carries for {@code s}. */
  private static Map<String, String> secrets(ModelStep.Secret s) {
    return s == ModelStep.Secret.NONE ? Map.of() : Map.of(ENCRYPTION_SECRET, passphrase(s));
  }

  /** The key of the CSI secrets map that holds the passphrase (docs/encryption.md). */
  private static final String ENCRYPTION_SECRET = "encryptionPassphrase";

  /** The passphrase that opens {@code v} (or keys it, if it has none yet); KEY for an unknown volume. */
  static ModelStep.Secret rightKey(ModelState.Vol v) {
    return v == null || v.key == null ? ModelStep.Secret.KEY : v.key;
  }
  Path dhvVolumesDir() {
    return dhvNode == null ? f.work.resolve("dhv/host_volumes") : dhvNode.volumesDir();
  }

  // ---- paths, as Nomad lays them out -----------------------------------------------------------

  Path staging(String name) throws IOException {
    return f.dir("staging/" + name);
  }

  /** Nomad creates the parent; the target itself is the plugin's. */
  Path target(String name, int t, boolean block) throws IOException {
    return f.dir("per-alloc/" + name + "-t" + t).resolve(block ? "block" : "mount");
  }

  Path target(ModelState.Vol v, int t) throws IOException {
    return target(v.name, t, v.block);
  }

  static VolumeCapability cap(boolean block, int mode) {
    Mode m = switch (mode) {
      case ModelState.MULTI_WRITER -> Mode.SINGLE_NODE_MULTI_WRITER;
      case ModelState.SOLE_WRITER -> Mode.SINGLE_NODE_SINGLE_WRITER;
      default -> Mode.SINGLE_NODE_WRITER;
    };
    return block ? Caps.block(m) : Caps.mount("ext4", m);
  }

  private String volumeId(String name) {
    ModelState.Vol v = m.volumes.get(name);
    if (v != null) {
      return v.id;
    }
    return m.formerIds.getOrDefault("volume " + name, f.backend.absentVolumeId(f.work));
  }

  private String snapshotId(String name) {
    ModelState.Snap s = m.snapshots.get(name);
    if (s != null) {
      return s.id();
    }
    return m.formerIds.getOrDefault("snapshot " + name, f.backend.absentSnapshotId(f.work));
  }

  private ControllerGrpc.ControllerBlockingStub ctl() {
    return f.controller.withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS);
  }

  private NodeGrpc.NodeBlockingStub node() {
    return f.node.withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS);
  }

  // ---- calls and their codes -------------------------------------------------------------------

  record Answer<T>(Code code, String message, T value) {}

  /** One call, whose code must be in {@code allowed}; made twice at once when {@code twice}. */
  private <T> Answer<T> call(String rpc, Set<Code> allowed, boolean twice, Callable<T> call) {
    if (!twice) {
      Answer<T> a = attempt(call);
      check(rpc, allowed, a);
      return a;
    }
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      Future<Answer<T>> one = pool.submit(() -> attempt(call));
      Future<Answer<T>> two = pool.submit(() -> attempt(call));
      List<Answer<T>> both = List.of(one.get(), two.get());
      Set<Code> either = ModelSpec.concurrent(allowed);
      for (Answer<T> a : both) {
        check(rpc + " (made twice at once)", either, a);
      }
      if (both.stream().allMatch(a -> a.code() == ABORTED)) {
        throw new ModelFailure("spec code of " + rpc, "both of two identical concurrent calls were ABORTED:"
            + " one of them holds the volume and must finish");
      }
      if (both.get(0).code() == OK && both.get(1).code() == OK && !both.get(0).value().equals(both.get(1).value())) {
        throw new ModelFailure("idempotency of " + rpc, "two identical concurrent calls answered differently: "
            + both.get(0).value() + " / " + both.get(1).value());
      }
      return both.stream().filter(a -> a.code() != ABORTED).findFirst().orElseThrow();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    } catch (ExecutionException e) {
      throw new AssertionError(e.getCause());
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * Makes the call; if the plugin was armed and died at its crash point, starts a fresh plugin on the
   * same host state and makes the very same call again, as the CO retries it.
   */
  private <T> Answer<T> attempt(Callable<T> call) {
    Answer<T> a = once(call);
    if (forked != null && a.code() == UNAVAILABLE) {
      try {
        var exit = forked.exitStatus(CALL_SECONDS);
        if (exit.isEmpty() || exit.getAsInt() != CrashPoints.EXIT_STATUS
            || !forked.log().contains("crash point " + crash + " reached")) {
          throw new ModelFailure("crash point " + crash, "the plugin answered UNAVAILABLE (" + a.message()
              + ") without dying at its crash point: " + exit + "\n" + forked.log());
        }
        forked.close();
        forked = null;
        f.disconnect();
        f.startPlugin();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      } catch (IOException e) {
        throw new AssertionError("the plugin did not start after its crash", e);
      }
      a = once(call);
    }
    return a;
  }

  private static <T> Answer<T> once(Callable<T> call) {
    try {
      return new Answer<>(OK, "", call.call());
    } catch (StatusRuntimeException e) {
      return new Answer<>(e.getStatus().getCode(), String.valueOf(e.getStatus().getDescription()), null);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  /** The code is one the spec allows; an error's message is for people: present, no exception names or stack frames. */
  private static void check(String rpc, Set<Code> allowed, Answer<?> a) {
    if (!allowed.contains(a.code())) {
      throw new ModelFailure("spec code of " + rpc, "answered " + a.code() + " (" + a.message() + "), the spec"
          + " allows " + allowed + " in this state");
    }
    if (a.code() != OK && (a.message().isBlank() || a.message().equals("null") || a.message().contains("Exception")
        || a.message().contains("\tat "))) {
      throw new ModelFailure("error message of " + rpc, "not a message for people: '" + a.message() + "'");
    }
    if (passphrases().stream().anyMatch(a.message()::contains)) {
      // ModelFailure redacts it: the report says that it leaked, not what
      throw new ModelFailure("no secret in a message", rpc + " answered " + a.code() + " with a passphrase in its"
          + " message: '" + a.message() + "'");
    }
  }

  // ---- the steps -------------------------------------------------------------------------------

  void apply(ModelStep s) throws IOException, InterruptedException {
    if (!s.crash().isEmpty()) {
      arm(s.crash());
    }
    try {
      switch (s.op()) {
        case CREATE -> create(s, s.flag(), s.n(), "", null, baseBytes, true, null);
        case CREATE_FROM_SNAPSHOT -> createFromSnapshot(s);
        case CLONE -> cloneVolume(s);
        case DELETE -> delete(s);
        case SNAPSHOT -> snapshot(s);
        case DELETE_SNAPSHOT -> deleteSnapshot(s);
        case EXPAND -> expand(s);
        case STAGE -> stage(s.vol(), s.flag(), s.secret(), s.twice());
        case PUBLISH -> publish(s.vol(), s.n(), s.flag(), s.twice());
        case UNPUBLISH -> unpublish(s.vol(), s.n(), s.twice());
        case UNSTAGE -> unstage(s.vol(), s.twice());
        case WRITE -> write(s.vol(), s.n());
        case VERIFY -> verify(s.vol());
        case STATS -> stats(s.vol(), s.n());
        case BAD -> ModelBadInput.send(this, s);
        case RESTART -> f.restart();
        case DHV_CREATE -> dhvCreate(s.vol());
        case DHV_DELETE -> dhvDelete(s.vol());
      }
    } finally {
      if (forked != null) {
        disarm();
      }
    }
  }

  /** Runs the plugin as its own {@code caravan serve} process, armed to die at {@code step}. */
  private void arm(String step) throws IOException, InterruptedException {
    f.stopPlugin();
    crash = step;
    forked = ForkedPlugin.start(f, step);
    f.connect();
  }

  /** The step never reached the crash point: the armed process goes, and an ordinary plugin takes over. */
  private void disarm() throws IOException, InterruptedException {
    f.disconnect();
    forked.close();
    forked = null;
    f.startPlugin();
  }

  /**
   * CreateVolume of {@code s.vol()}, empty or from {@code source} (which the model holds as {@code keyed},
   * null when absent or empty), with {@code parameters.encryption=on} and the passphrase as the step says.
   */
  private void create(ModelStep s, boolean block, int mode, String source, VolumeContentSource content, long bytes,
      boolean sourceExists, ModelSpec.Keyed keyed) {
    String request = (source.isEmpty() ? "empty" : source) + " " + (block ? "block" : "mount")
        + (s.encrypt() ? " encrypted" : "") + " " + bytes;
    Set<Code> allowed = ModelSpec.create(m, s.vol(), request, mode, sourceExists, s.encrypt(), s.secret(), keyed);
    CreateVolumeRequest.Builder req = CreateVolumeRequest.newBuilder().setName(s.vol())
        .addVolumeCapabilities(cap(block, mode)).setCapacityRange(Caps.bytes(bytes)).putAllParameters(
            f.backend.sparseParameters()).putAllSecrets(secrets(s.secret()));
    if (s.encrypt()) {
      req.putParameters("encryption", "on");
    }
    if (content != null) {
      req.setVolumeContentSource(content);
    }
    Answer<Volume> a = call("CreateVolume", allowed, s.twice(), () -> ctl().createVolume(req.build()).getVolume());
    if (s.encrypt() || (keyed != null && keyed.encrypted())) {
      cover("CreateVolume " + (content == null ? "" : "from " + (keyed != null && keyed.encrypted() ? "an encrypted"
          : "a plain") + " source ") + (s.encrypt() ? "encryption=on" : "encryption=off") + ", "
          + (s.secret() == ModelStep.Secret.NONE ? "no passphrase" : "a passphrase") + ": " + a.code());
    }
    if (a.code() != OK || m.volumes.containsKey(s.vol())) {
      if (a.code() == OK && !a.value().getVolumeId().equals(m.volumes.get(s.vol()).id)) {
        throw new ModelFailure("idempotency of CreateVolume", "a repeat of " + s.vol() + " answered another volume: "
            + a.value().getVolumeId() + " (was " + m.volumes.get(s.vol()).id + ")");
      }
      return;
    }
    Volume v = a.value();
    if (v.getCapacityBytes() < bytes) {
      throw new ModelFailure("CreateVolume size", v.getVolumeId() + " has " + v.getCapacityBytes() + " bytes, asked "
          + bytes);
    }
    String from = source.startsWith("snapshot ") ? source.substring("snapshot ".length()) : null;
    // A copy opens with its source's passphrase (it holds the source's blocks, key or header included);
    // a new encrypted zvol is keyed at create, a new encrypted file volume at its first stage.
    ModelStep.Secret key = !s.encrypt() ? null : keyed != null ? keyed.key()
        : m.crypto.keyedAtCreate() ? s.secret() : null;
    ModelState.Vol vol = new ModelState.Vol(s.vol(), v.getVolumeId(), v.getVolumeContextMap(), block, mode, request,
        v.getCapacityBytes(), from, s.encrypt(), key);
    m.volumes.put(s.vol(), vol);
  }

  private void createFromSnapshot(ModelStep s) {
    ModelState.Snap snap = m.snapshots.get(s.other());
    VolumeContentSource content = VolumeContentSource.newBuilder().setSnapshot(
        VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(snapshotId(s.other()))).build();
    boolean block = snap != null && snap.block();
    long bytes = snap == null ? baseBytes : snap.bytes();
    boolean existed = m.volumes.containsKey(s.vol());
    create(s, block, ModelState.SINGLE_WRITER, "snapshot " + s.other(), content, bytes, snap != null,
        snap == null ? null : new ModelSpec.Keyed(snap.encrypted(), snap.key()));
    ModelState.Vol v = m.volumes.get(s.vol());
    if (!existed && v != null) {
      v.records = snap.records();
      v.formatted = snap.formatted();
    }
  }

  private void cloneVolume(ModelStep s) {
    ModelState.Vol src = m.volumes.get(s.other());
    VolumeContentSource content = VolumeContentSource.newBuilder().setVolume(
        VolumeContentSource.VolumeSource.newBuilder().setVolumeId(volumeId(s.other()))).build();
    boolean existed = m.volumes.containsKey(s.vol());
    create(s, src != null && src.block, ModelState.SINGLE_WRITER, "volume " + s.other(), content,
        src == null ? baseBytes : src.bytes, src != null, src == null ? null : new ModelSpec.Keyed(src.encrypted, src.key));
    ModelState.Vol v = m.volumes.get(s.vol());
    if (!existed && v != null) {
      v.records = src.records;
      v.formatted = src.formatted;
    }
  }

  private void delete(ModelStep s) {
    String id = volumeId(s.vol());
    ModelState.Vol gone = m.volumes.get(s.vol());
    Answer<?> a = call("DeleteVolume", ModelSpec.delete(m, s.vol()), s.twice(),
        () -> ctl().deleteVolume(DeleteVolumeRequest.newBuilder().setVolumeId(id).build()));
    if (gone != null && gone.encrypted) {
      cover("DeleteVolume of an encrypted volume: " + a.code());
    }
    if (a.code() == OK && m.volumes.remove(s.vol()) != null) {
      m.formerIds.put("volume " + s.vol(), id);
    }
  }

  private void snapshot(ModelStep s) {
    String source = volumeId(s.vol());
    Answer<dev.caravan.csi.v1.Snapshot> a = call("CreateSnapshot", ModelSpec.snapshot(m, s.other(), s.vol()),
        s.twice(), () -> ctl().createSnapshot(CreateSnapshotRequest.newBuilder().setName(s.other())
            .setSourceVolumeId(source).build()).getSnapshot());
    if (a.code() != OK || m.snapshots.containsKey(s.other())) {
      return;
    }
    if (!a.value().getReadyToUse() || !a.value().getSourceVolumeId().equals(source)) {
      throw new ModelFailure("CreateSnapshot answer", "not ready, or of another source: " + a.value());
    }
    ModelState.Vol v = m.volumes.get(s.vol());
    m.snapshots.put(s.other(), new ModelState.Snap(s.other(), a.value().getSnapshotId(), s.vol(), v.block, v.bytes,
        v.records, v.formatted, v.encrypted, v.key));
  }

  private void deleteSnapshot(ModelStep s) {
    String id = snapshotId(s.other());
    Answer<?> a = call("DeleteSnapshot", ModelSpec.deleteSnapshot(m, s.other()), s.twice(),
        () -> ctl().deleteSnapshot(DeleteSnapshotRequest.newBuilder().setSnapshotId(id).build()));
    if (a.code() == OK && m.snapshots.remove(s.other()) != null) {
      m.formerIds.put("snapshot " + s.other(), id);
    }
  }

  /** ControllerExpandVolume by one growth step, then NodeExpandVolume where the volume is staged, as the CO does. */
  private void expand(ModelStep s) throws IOException {
    ModelState.Vol v = m.volumes.get(s.vol());
    long want = (v == null ? baseBytes : v.bytes) + growBytes;
    String id = volumeId(s.vol());
    Answer<ControllerExpandVolumeResponse> a = call("ControllerExpandVolume", ModelSpec.controllerExpand(m, s.vol()),
        s.twice(), () -> ctl().controllerExpandVolume(ControllerExpandVolumeRequest.newBuilder().setVolumeId(id)
            .setCapacityRange(Caps.bytes(want)).build()));
    if (v != null && v.encrypted) {
      cover("ControllerExpandVolume of an encrypted volume, " + (v.staged ? "staged" : "not staged") + ": " + a.code());
    }
    if (a.code() != OK) {
      return;
    }
    if (a.value().getCapacityBytes() < want) {
      throw new ModelFailure("ControllerExpandVolume size", "answered " + a.value().getCapacityBytes() + " < " + want);
    }
    v.bytes = a.value().getCapacityBytes();
    if (!a.value().getNodeExpansionRequired() || !v.staged || (v.block && v.targets.isEmpty())) {
      return;
    }
    if (!v.block && !HostRequirements.hasCapSysResource()) {
      return; // ext4 online resize needs CAP_SYS_RESOURCE; the growth then happens at the next stage
    }
    Path path = v.targets.isEmpty() ? staging(v.name) : target(v, v.targets.keySet().iterator().next());
    // A refused NodeExpandVolume changes nothing the model holds: the device keeps its size until a
    // later expansion or stage grows it, and every check must hold as before.
    Answer<?> grown = call("NodeExpandVolume", ModelSpec.nodeExpand(m, v, s.secret()), false, () -> node().nodeExpandVolume(
        NodeExpandVolumeRequest.newBuilder().setVolumeId(v.id).setVolumePath(path.toString())
            .setStagingTargetPath(staging(v.name).toString()).setVolumeCapability(cap(v.block, v.mode))
            .setCapacityRange(Caps.bytes(v.bytes)).putAllSecrets(secrets(s.secret())).build()));
    if (v.encrypted) {
      cover("NodeExpandVolume of an encrypted volume with " + role(v, s.secret()) + ": " + grown.code());
    }
  }

  private void stage(String name, boolean wrongAccessType, ModelStep.Secret secret, boolean twice) throws IOException {
    ModelState.Vol v = m.volumes.get(name);
    boolean block = v != null && (v.block != wrongAccessType);
    int mode = v == null ? ModelState.SINGLE_WRITER : v.mode;
    String id = volumeId(name);
    if (v != null && f.backend.publishes() && !v.fenced && !wrongAccessType) {
      call("ControllerPublishVolume", EnumSet.of(OK), false, () -> ctl().controllerPublishVolume(
          ControllerPublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId(f.backend.nodeId())
              .setVolumeCapability(cap(block, mode)).build()));
      v.fenced = true;
    }
    Path staging = staging(name);
    Map<String, String> context = v == null ? Map.of() : v.context;
    Answer<?> a = call("NodeStageVolume", ModelSpec.stage(m, name, wrongAccessType, secret), twice,
        () -> node().nodeStageVolume(NodeStageVolumeRequest.newBuilder().setVolumeId(id).putAllVolumeContext(context)
            .setStagingTargetPath(staging.toString()).setVolumeCapability(cap(block, mode))
            .putAllSecrets(secrets(secret)).build()));
    if (v != null && v.encrypted) {
      cover("NodeStageVolume of an encrypted " + (v.block ? "block" : "mount") + " volume"
          + (v.key == null ? " not keyed yet" : "") + (v.staged ? " staged already" : "") + " with "
          + role(v, secret) + ": " + a.code());
    }
    if (a.code() == OK && v != null) {
      v.staged = true;
      v.formatted |= !v.block;
      if (v.encrypted && v.key == null) {
        v.key = secret; // the first stage of an encrypted file volume formats LUKS2 with its passphrase
      }
    }
  }

  private void publish(String name, int t, boolean readOnly, boolean twice) throws IOException {
    ModelState.Vol v = m.volumes.get(name);
    boolean block = v != null && v.block;
    int mode = v == null ? ModelState.SINGLE_WRITER : v.mode;
    String id = volumeId(name);
    Path target = target(name, t, block);
    Path staging = staging(name);
    Map<String, String> context = v == null ? Map.of() : v.context;
    Answer<?> a = call("NodePublishVolume", ModelSpec.publish(m, name, t, readOnly), twice,
        () -> node().nodePublishVolume(NodePublishVolumeRequest.newBuilder().setVolumeId(id).putAllVolumeContext(context)
            .setStagingTargetPath(staging.toString()).setTargetPath(target.toString())
            .setVolumeCapability(cap(block, mode)).setReadonly(readOnly).build()));
    if (a.code() == OK && v != null) {
      v.targets.put(t, readOnly);
    }
  }

  private void unpublish(String name, int t, boolean twice) throws IOException {
    ModelState.Vol v = m.volumes.get(name);
    String id = volumeId(name);
    Path target = target(name, t, v != null && v.block);
    Answer<?> a = call("NodeUnpublishVolume", ModelSpec.unpublish(m, name), twice,
        () -> node().nodeUnpublishVolume(NodeUnpublishVolumeRequest.newBuilder().setVolumeId(id)
            .setTargetPath(target.toString()).build()));
    if (a.code() == OK && v != null) {
      v.targets.remove(t);
    }
  }

  /** Unstages as Nomad does: where ControllerPublish is the fence, ControllerUnpublish follows. */
  private void unstage(String name, boolean twice) throws IOException {
    ModelState.Vol v = m.volumes.get(name);
    String id = volumeId(name);
    Path staging = staging(name);
    Answer<?> a = call("NodeUnstageVolume", ModelSpec.unstage(m, name), twice,
        () -> node().nodeUnstageVolume(NodeUnstageVolumeRequest.newBuilder().setVolumeId(id)
            .setStagingTargetPath(staging.toString()).build()));
    if (a.code() == OK && v != null) {
      v.staged = false;
      if (v.fenced) {
        call("ControllerUnpublishVolume", EnumSet.of(OK), false, () -> ctl().controllerUnpublishVolume(
            ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId(f.backend.nodeId()).build()));
        v.fenced = false;
      }
    }
  }

  // ---- data ------------------------------------------------------------------------------------

  /** The record log of a volume published at {@code target}: a file on a filesystem, the device itself for block. */
  static Path logAt(Path target, boolean block) {
    return block ? target : target.resolve("records");
  }

  /** Appends records through a writable target and fsyncs them (a volume with none: nothing to do). */
  private void write(String name, int count) throws IOException {
    ModelState.Vol v = m.volumes.get(name);
    if (v == null || !v.hasWritableTarget()) {
      return;
    }
    int t = v.targets.entrySet().stream().filter(e -> !e.getValue()).findFirst().orElseThrow().getKey();
    Path target = target(v, t);
    try {
      RecordLog.appendDurably(logAt(target, v.block), v.records, count, ++generation);
      if (!v.block) {
        try (FileChannel dir = FileChannel.open(target, StandardOpenOption.READ)) {
          dir.force(true);
        }
      }
    } catch (IOException e) {
      throw new ModelFailure("write through a publish target", "cannot write " + count + " records to " + name
          + " at " + target + ": " + e, e);
    }
    v.records += count;
    if (v.encrypted) {
      cover("records written through an encrypted volume");
    }
  }

  /**
   * Reads the volume's record log where it is reachable now: at a published target, or at the staging
   * path of a mount volume; a volume that is neither is staged and published read-only for the check,
   * and taken down again.
   */
  void verify(String name) throws IOException {
    ModelState.Vol v = m.volumes.get(name);
    if (v == null) {
      return;
    }
    if (!v.targets.isEmpty()) {
      expectRecords(v, logAt(target(v, v.targets.keySet().iterator().next()), v.block));
      return;
    }
    if (v.staged) {
      if (!v.block) {
        expectRecords(v, logAt(staging(name), false));
      }
      return;
    }
    if (v.records == 0 && !v.formatted) {
      return; // nothing written yet: staging it would only format it
    }
    stage(name, false, rightKey(v), false);
    publish(name, VERIFY_TARGET, true, false);
    expectRecords(v, logAt(target(v, VERIFY_TARGET), v.block));
    if (v.encrypted && v.records > 0) {
      cover("records read back from an encrypted volume staged again");
    }
    unpublish(name, VERIFY_TARGET, false);
    unstage(name, false);
  }

  void expectRecords(ModelState.Vol v, Path log) throws IOException {
    RecordLog.Contents c;
    if (!v.block && !Files.exists(log)) {
      c = new RecordLog.Contents(0, 0);
    } else {
      c = v.block ? RecordLog.readPrefix(log, (int) ((v.records + 1) * RecordLog.RECORD)) : RecordLog.read(log);
    }
    boolean intact = v.block ? c.records() == v.records : c.equals(new RecordLog.Contents(v.records, 0));
    if (!intact) {
      throw new ModelFailure("no data lost", v.name + " (" + v.id + ") holds " + c + " at " + log + "; every one of "
          + v.records + " fsynced records should be there, intact, and nothing after them");
    }
  }

  private void stats(String name, int t) throws IOException {
    ModelState.Vol v = m.volumes.get(name);
    Path path = t < 0 ? staging(name) : target(name, t, v != null && v.block);
    boolean itsPath = v != null && (t < 0 ? v.staged && !v.block : v.targets.containsKey(t));
    Answer<NodeGetVolumeStatsResponse> a = call("NodeGetVolumeStats", ModelSpec.atVolumePath(m, name, itsPath), false,
        () -> node().nodeGetVolumeStats(NodeGetVolumeStatsRequest.newBuilder().setVolumeId(volumeId(name))
            .setVolumePath(path.toString()).setStagingTargetPath(staging(name).toString()).build()));
    if (a.code() == OK && !v.block) {
      boolean bytes = a.value().getUsageList().stream().anyMatch(u -> u.getUnit() == VolumeUsage.Unit.BYTES
          && u.getTotal() > 0 && u.getTotal() <= v.bytes);
      if (!bytes || a.value().getVolumeCondition().getAbnormal()) {
        throw new ModelFailure("NodeGetVolumeStats answer", "no sane byte usage or abnormal: " + a.value());
      }
    }
  }

  // ---- bad input -------------------------------------------------------------------------------

  /** A call with bad input, its code checked like any other's; the model does not change. */
  <T> void bad(String rpc, Set<Code> allowed, Callable<T> request) {
    call(rpc, allowed, false, request);
  }

  ControllerGrpc.ControllerBlockingStub controller() {
    return ctl();
  }

  NodeGrpc.NodeBlockingStub nodeStub() {
    return node();
  }

  String idOf(String name) {
    return volumeId(name);
  }

  String snapshotIdOf(String name) {
    return snapshotId(name);
  }

  // ---- DHV ---------------------------------------------------------------------------------------

  private DhvEnv.Volume dhvVolume(String name) {
    String id = UUID.nameUUIDFromBytes(("dhv " + name).getBytes(StandardCharsets.UTF_8)).toString();
    return new DhvEnv.Volume(id, "dhv-" + name, "default", baseBytes, 0, "null");
  }

  Path dhvPath(String name) {
    return dhvVolumesDir().resolve(dhvVolume(name).id());
  }

  private NomadDhvRunner.Outcome dhv(String op, Map<String, String> env) {
    return NomadDhvRunner.run(dhvNode.pluginDir().resolve(DhvInstaller.pluginId(f.backend.driver(),
        dev.caravan.csi.dhv.Mode.IMMEDIATE)), op, env, NomadDhvRunner.OP_DEADLINE);
  }

  /** DHV create through the plugin executable, as a Nomad client runs it: a repeat is idempotent. */
  private void dhvCreate(String name) {
    NomadDhvRunner.Outcome o = dhv("create", DhvEnv.create(dhvNode, dhvVolume(name)));
    if (o.exitStatus() != 0 || !String.valueOf(o.json().get("path")).equals(dhvPath(name).toString())) {
      throw new ModelFailure("DHV create", name + ": " + o);
    }
    m.dhv.add(name);
  }

  private void dhvDelete(String name) {
    NomadDhvRunner.Outcome o = dhv("delete", DhvEnv.delete(dhvNode, dhvVolume(name), dhvPath(name).toString()));
    if (o.exitStatus() != 0) {
      throw new ModelFailure("DHV delete", name + ": " + o);
    }
    m.dhv.remove(name);
  }

  // ---- the end -----------------------------------------------------------------------------------

  /**
   * Takes everything down through the CSI API (and DHV delete), reading every volume's records on the
   * way: the run's last check of "no data lost" covers volumes that were idle at every step.
   */
  void tearDown() throws IOException {
    for (ModelState.Vol v : List.copyOf(m.volumes.values())) {
      verify(v.name);
      for (int t : List.copyOf(v.targets.keySet())) {
        unpublish(v.name, t, false);
      }
      if (v.staged) {
        unstage(v.name, false);
      }
    }
    for (String s : List.copyOf(m.snapshots.keySet())) {
      deleteSnapshot(ModelStep.of(ModelStep.Op.DELETE_SNAPSHOT, "").withOther(s));
    }
    List<String> names = new ArrayList<>(m.volumes.keySet());
    for (String name : names) {
      delete(ModelStep.of(ModelStep.Op.DELETE, name));
    }
    for (String name : List.copyOf(m.dhv)) {
      dhvDelete(name);
    }
  }

  @Override
  public void close() throws IOException, InterruptedException {
    if (forked != null) {
      forked.close();
      forked = null;
    }
    try (var s = Files.walk(outside)) {
      for (Path p : s.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    }
  }

  static Set<Code> plus(Set<Code> a, Code... more) {
    EnumSet<Code> s = EnumSet.copyOf(a);
    s.addAll(List.of(more));
    return s;
  }

  static final Set<Code> INVALID = EnumSet.of(INVALID_ARGUMENT);
  static final Set<Code> MISSING = EnumSet.of(NOT_FOUND);
}
