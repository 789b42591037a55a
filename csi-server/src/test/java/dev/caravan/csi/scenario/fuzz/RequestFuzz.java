package dev.caravan.csi.scenario.fuzz;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.protobuf.Message;
import com.google.protobuf.TextFormat;
import dev.caravan.csi.scenario.Caps;
import dev.caravan.csi.scenario.PluginFixture;
import dev.caravan.csi.scenario.TestBackend;
import dev.caravan.csi.scenario.fuzz.FuzzDraw.Against;
import dev.caravan.csi.scenario.fuzz.FuzzDraw.Defect;
import dev.caravan.csi.scenario.fuzz.FuzzDraw.PathUse;
import dev.caravan.csi.v1.ControllerExpandVolumeRequest;
import dev.caravan.csi.v1.ControllerGetVolumeRequest;
import dev.caravan.csi.v1.ControllerModifyVolumeRequest;
import dev.caravan.csi.v1.ControllerPublishVolumeRequest;
import dev.caravan.csi.v1.ControllerUnpublishVolumeRequest;
import dev.caravan.csi.v1.CreateSnapshotRequest;
import dev.caravan.csi.v1.CreateVolumeRequest;
import dev.caravan.csi.v1.DeleteSnapshotRequest;
import dev.caravan.csi.v1.DeleteVolumeRequest;
import dev.caravan.csi.v1.GetCapacityRequest;
import dev.caravan.csi.v1.GetCapacityResponse;
import dev.caravan.csi.v1.GetSnapshotRequest;
import dev.caravan.csi.v1.ListSnapshotsRequest;
import dev.caravan.csi.v1.ListSnapshotsResponse;
import dev.caravan.csi.v1.ListVolumesRequest;
import dev.caravan.csi.v1.NodeExpandVolumeRequest;
import dev.caravan.csi.v1.NodeGetVolumeStatsRequest;
import dev.caravan.csi.v1.NodePublishVolumeRequest;
import dev.caravan.csi.v1.NodeStageVolumeRequest;
import dev.caravan.csi.v1.NodeUnpublishVolumeRequest;
import dev.caravan.csi.v1.NodeUnstageVolumeRequest;
import dev.caravan.csi.v1.Topology;
import dev.caravan.csi.v1.TopologyRequirement;
import dev.caravan.csi.v1.ValidateVolumeCapabilitiesRequest;
import dev.caravan.csi.v1.ValidateVolumeCapabilitiesResponse;
import dev.caravan.csi.v1.VolumeCapability;
import dev.caravan.csi.v1.VolumeContentSource;
import io.grpc.Status.Code;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Property: every bad request, to every RPC, is answered with a non-OK code csi-spec-rules.md
 * documents for that RPC (OK only where the spec says so: deleting, unstaging or unpublishing what is
 * not there; never INTERNAL, UNKNOWN or a code no table names), with a message, and changes nothing
 * on the host: not the plugin's mounts, not a file under its mount root, its data directory or the
 * decoys outside it, not what it lists, not the backend's storage or attached devices.
 *
 * <p>The requests are randomized from a fixed seed (logged; {@code -Dcaravan.fuzz.seed=N} replays
 * another) and aimed both at nothing and at real volumes (staged and published, for mount and block
 * access; idle with a snapshot), with bad ids, {@code ..}, NUL, 10 KiB strings, relative paths,
 * paths into /proc, /etc and the plugin's data directory, symlinks out of the mount root,
 * contradictory capabilities, absurd capacities and page tokens it never issued. One plugin serves
 * the whole class; on a machine shared with other work it is a separate process in a private mount
 * namespace, so that a request answered wrongly cannot mount anything over the host's directories.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class RequestFuzz {
  static final long SEED = Long.getLong("caravan.fuzz.seed", 0x5eed_2026_1201L);
  private static final long CALL_DEADLINE_SECONDS = 120;
  /** Reading the storage and devices is slow (every loop device, or zfs list): done every so many tries. */
  private static final int FULL_CHECK_EVERY = 25;

  private PluginFixture f;
  private FuzzPlugin plugin;
  private FuzzWorld world;
  /** The host as the fuzz found it once its world was built; every property starts from it. */
  private FuzzState pristine;
  private final Map<FuzzRpc, Map<String, Integer>> outcomes = new EnumMap<>(FuzzRpc.class);
  private final List<String> secretsSent = new ArrayList<>();

  abstract TestBackend backend();

  /**
   * Whether the plugin runs as its own process in a private mount namespace (as on any machine shared
   * with other work) rather than in this JVM.
   */
  abstract boolean isolatePlugin();

  /** Tries per RPC; {@code -Dcaravan.fuzz.tries=N} overrides. */
  abstract int defaultTries();

  private int tries() {
    return Integer.getInteger("caravan.fuzz.tries", defaultTries());
  }

  @BeforeAll
  void startOnePlugin() throws Exception {
    if (backend().missing().isPresent()) {
      return; // each test is skipped with the reason, in requireBackend()
    }
    startWorld();
    System.out.printf("RequestFuzz on %s: seed %d (replay with -Dcaravan.fuzz.seed=%d), %d tries per RPC%n",
        backend(), SEED, SEED, tries());
  }

  private void startWorld() throws Exception {
    f = PluginFixture.unstarted(backend());
    plugin = FuzzPlugin.start(f, isolatePlugin());
    world = FuzzWorld.build(f, SEED);
    pristine = FuzzState.read(world, plugin, true);
  }

  /**
   * The pristine state, rebuilding the world (new plugin, volumes, decoys) when an earlier property
   * found a request that changed it: a finding in one RPC must not turn into findings in the next.
   */
  private FuzzState pristineWorld() throws Exception {
    List<String> changes = FuzzState.read(world, plugin, true).changesSince(pristine, true);
    if (changes.isEmpty()) {
      return pristine;
    }
    System.out.println("RequestFuzz: an earlier property left the host changed; starting over: " + changes);
    try {
      stopWorld();
    } catch (Exception | AssertionError e) {
      System.out.println("RequestFuzz: cleaning up after it: " + e);
    }
    startWorld();
    return pristine;
  }

  private void stopWorld() throws Exception {
    try {
      if (plugin.isAlive()) {
        world.tearDown();
      }
    } finally {
      try {
        plugin.close();
      } finally {
        world.removeDecoys();
        f.close();
      }
    }
  }

  @BeforeEach
  void requireBackend() {
    backend().assumeAvailable();
    assumeTrue(plugin != null && plugin.isAlive(), "the fuzz's plugin process is not running");
  }

  @AfterAll
  void stopThePlugin() throws Exception {
    if (f == null) {
      return;
    }
    try {
      StringBuilder summary = new StringBuilder("RequestFuzz on " + backend() + ", seed " + SEED + ":\n");
      outcomes.forEach((rpc, codes) -> summary.append(String.format("  %-30s %5d tries  %s%n", rpc,
          codes.entrySet().stream().filter(e -> !e.getKey().equals("held back") && !e.getKey().equals("seconds"))
              .mapToInt(Map.Entry::getValue).sum(),
          codes)));
      System.out.print(summary);
      String log = plugin.log();
      for (String secret : secretsSent) {
        assertThat(log).as("the plugin's log must not contain a secret (csi-spec-rules.md §1.6)").doesNotContain(secret);
      }
    } finally {
      stopWorld();
    }
  }

  /** One request, what it was meant to get wrong, and how to send it. */
  private record Case(FuzzRpc rpc, Message request, List<Defect> defects, String pending,
      Function<Message, Message> call, Predicate<Message> okAnswer) {}

  private Case call(FuzzDraw d, Message request, Function<Message, Message> call) {
    return call(d, request, call, response -> true);
  }

  private Case call(FuzzDraw d, Message request, Function<Message, Message> call, Predicate<Message> okAnswer) {
    return new Case(d.rpc, request, List.copyOf(d.defects), d.pending, call, okAnswer);
  }

  private String secret(FuzzDraw d) {
    String s = "fuzz-secret-" + d.hex12();
    secretsSent.add(s);
    return s;
  }

  // ---- the property --------------------------------------------------------------------------------

  private void property(FuzzRpc rpc, int fields, Function<FuzzDraw, Case> generator) throws Exception {
    SplittableRandom random = new SplittableRandom(SEED ^ rpc.name().hashCode());
    Map<String, Integer> codes = outcomes.computeIfAbsent(rpc, r -> new TreeMap<>());
    long started = System.nanoTime();
    FuzzState baseline = pristineWorld();
    Map<String, String> failures = new LinkedHashMap<>();
    Map<String, Integer> failureCounts = new LinkedHashMap<>();
    Map<String, Integer> heldBack = new TreeMap<>();
    int n = tries();
    for (int i = 0, drawn = 0; i < n && drawn < 20 * n; drawn++) {
      Case c = generator.apply(new FuzzDraw(random, rpc, world, fields));
      if (c.pending() != null && !FuzzDraw.sendPending(c.pending())) {
        heldBack.merge(c.pending(), 1, Integer::sum);
        continue;
      }
      i++;
      Code code;
      String description = "";
      Message response = null;
      try {
        response = c.call().apply(c.request());
        code = Code.OK;
      } catch (StatusRuntimeException e) {
        code = e.getStatus().getCode();
        description = e.getStatus().getDescription() == null ? "" : e.getStatus().getDescription();
      }
      codes.merge(code.name(), 1, Integer::sum);
      String verdict = verdict(c, code, description, response);
      boolean full = i % FULL_CHECK_EVERY == 0 || i == n;
      FuzzState now = FuzzState.read(world, plugin, full);
      List<String> changes = now.changesSince(baseline, full);
      if (!changes.isEmpty()) {
        verdict = (verdict == null ? "" : verdict + "; ") + "it changed the host: " + changes
            + (full ? " (storage and devices are read every " + FULL_CHECK_EVERY + " tries: a change there may"
                + " come from any try since the last reading)" : "");
      }
      if (verdict != null) {
        String signature = c.defects().stream().map(dd -> dd.field() + ":" + dd.kind().replaceAll("'.*'", "''"))
            .sorted().toList() + " -> " + code + (changes.isEmpty() ? "" : " +changes");
        failureCounts.merge(signature, 1, Integer::sum);
        failures.putIfAbsent(signature, String.format("try %d: %s%n    request: %s%n    answer: %s %s%n    %s",
            i, c.defects(), shown(c.request()), code, FuzzDraw.printable(description), verdict));
        if (!changes.isEmpty()) {
          break; // the baseline no longer holds; what follows would only repeat this finding
        }
      }
    }
    codes.put("seconds", (int) TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started));
    if (!heldBack.isEmpty()) {
      System.out.println("RequestFuzz " + rpc + ": held back (-Dcaravan.fuzz.pending=true sends them): " + heldBack);
      codes.put("held back", heldBack.values().stream().mapToInt(Integer::intValue).sum());
    }
    if (!failures.isEmpty()) {
      StringBuilder msg = new StringBuilder(rpc + ": " + failures.size() + " kind(s) of wrong answer in " + n
          + " tries (seed " + SEED + "; replay with -Dcaravan.fuzz.seed=" + SEED + ")\n");
      failures.forEach((sig, first) -> msg.append("  [").append(failureCounts.get(sig)).append("x] ").append(first).append('\n'));
      throw new AssertionError(msg.toString());
    }
  }

  /**
   * NodeUnstage and NodeUnpublish decide "which volume" before "is the path well formed" (the order of
   * checks in NodeService): under an id this node never staged there is nothing to undo, which the spec
   * answers with OK whatever the path says; that nothing changed is checked as for every try.
   */
  private static boolean nothingToUndo(Case c) {
    return (c.rpc() == FuzzRpc.NODE_UNSTAGE_VOLUME || c.rpc() == FuzzRpc.NODE_UNPUBLISH_VOLUME)
        && c.defects().stream().anyMatch(d -> d.field().equals("volume_id") && d.permitsOk());
  }

  /** Why the answer is wrong for this request, or null when it is right. */
  private static String verdict(Case c, Code code, String description, Message response) {
    if (code == Code.OK) {
      if (!c.defects().stream().allMatch(Defect::permitsOk) && !nothingToUndo(c)) {
        return "OK for a request the spec says must fail";
      }
      if (!c.okAnswer().test(response)) {
        return "OK, but the answer claims support it must not: " + shown(response);
      }
      return null;
    }
    Set<Code> allowed = EnumSet.noneOf(Code.class);
    c.defects().forEach(d -> allowed.addAll(d.codes()));
    if (!allowed.contains(code)) {
      return code + " is not among the codes documented for it: " + allowed + (c.defects().stream()
          .allMatch(Defect::permitsOk) ? " or OK" : "");
    }
    if (description.isBlank()) {
      return "a non-OK answer must carry a message (csi-spec-rules.md §1.1)";
    }
    return null;
  }

  private static String shown(Message m) {
    String s = TextFormat.printer().emittingSingleLine(true).printToString(m);
    return s.length() > 600 ? s.substring(0, 600) + "...(" + s.length() + " chars)" : s;
  }

  private static <T extends Message, R extends Message> Function<Message, Message> send(Function<T, R> rpc) {
    return m -> {
      @SuppressWarnings("unchecked") // the generator pairs each request with its own RPC
      T request = (T) m;
      return rpc.apply(request);
    };
  }

  private dev.caravan.csi.v1.ControllerGrpc.ControllerBlockingStub ctl() {
    return f.controller.withDeadlineAfter(CALL_DEADLINE_SECONDS, TimeUnit.SECONDS);
  }

  private dev.caravan.csi.v1.NodeGrpc.NodeBlockingStub node() {
    return f.node.withDeadlineAfter(CALL_DEADLINE_SECONDS, TimeUnit.SECONDS);
  }

  // ---- controller RPCs -----------------------------------------------------------------------------

  @Test
  void createVolume() throws Exception {
    property(FuzzRpc.CREATE_VOLUME, 7, d -> {
      FuzzWorld.Real idle = world.idle;
      // the name is the idle volume's (so a request right in every other field repeats its create) or wrong
      CreateVolumeRequest.Builder b = CreateVolumeRequest.newBuilder()
          .setName(d.bad(0) ? d.badName("name") : idle.name());
      if (d.bad(1)) {
        switch (d.random.nextInt(3)) {
          case 0 -> d.fixed("volume_capabilities", "none", Code.INVALID_ARGUMENT);
          case 1 -> {
            b.addVolumeCapabilities(idle.cap());
            b.addVolumeCapabilities(Caps.mount("xfs"));
            d.invalid("volume_capabilities", "two filesystems at once");
          }
          default -> {
            VolumeCapability cap = d.badCapability("volume_capabilities[0]", idle.cap(), false, false, Against.CREATED);
            b.addVolumeCapabilities(cap == null ? VolumeCapability.getDefaultInstance() : cap);
          }
        }
      } else {
        b.addVolumeCapabilities(idle.cap());
      }
      b.setCapacityRange(d.bad(2) ? d.badCapacity("capacity_range", 0) : Caps.bytes(idle.bytes()));
      if (d.bad(3)) {
        b.putAllParameters(d.badParameters("parameters", false));
      }
      if (d.bad(4)) {
        switch (d.random.nextInt(4)) {
          case 0 -> {
            b.setVolumeContentSource(VolumeContentSource.getDefaultInstance());
            d.fixed("volume_content_source", "neither snapshot nor volume", Code.INVALID_ARGUMENT);
          }
          case 1 -> b.setVolumeContentSource(VolumeContentSource.newBuilder().setSnapshot(
              VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(
                  d.badSnapshotId("volume_content_source.snapshot.snapshot_id", world.snapshotId))));
          case 2 -> b.setVolumeContentSource(VolumeContentSource.newBuilder().setVolume(
              VolumeContentSource.VolumeSource.newBuilder().setVolumeId(
                  d.badVolumeId("volume_content_source.volume.volume_id", world.mounted.id()))));
          default -> {
            // a real source, but the existing volume of this name has none
            b.setVolumeContentSource(VolumeContentSource.newBuilder().setSnapshot(
                VolumeContentSource.SnapshotSource.newBuilder().setSnapshotId(world.snapshotId)));
            d.invalid("volume_content_source", "differs from the existing volume's");
          }
        }
      }
      if (d.bad(5)) {
        b.setAccessibilityRequirements(TopologyRequirement.newBuilder().addRequisite(
            Topology.newBuilder().putSegments("caravan.csi/node", d.pick("other-node", "", "x".repeat(300)))));
        d.invalid("accessibility_requirements", "only another node");
      }
      if (d.bad(6)) {
        b.putMutableParams("iops", "100");
        d.fixed("mutable_parameters", "set (no MODIFY_VOLUME)", Code.INVALID_ARGUMENT);
      }
      if (d.chance(20)) {
        b.putSecrets("password", secret(d));
      }
      return call(d, b.build(), send((CreateVolumeRequest r) -> ctl().createVolume(r)));
    });
  }

  @Test
  void deleteVolume() throws Exception {
    property(FuzzRpc.DELETE_VOLUME, 1, d -> {
      String id;
      switch (d.random.nextInt(8)) {
        case 0 -> {
          id = d.pick(world.mounted.id(), world.block.id());
          d.invalid("volume_id", "a volume in use (staged and published)");
        }
        case 1 -> {
          id = world.idle.id();
          d.invalid("volume_id", "a volume with a snapshot");
        }
        default -> id = d.badVolumeId("volume_id", d.pick(world.idle.id(), world.mounted.id()));
      }
      DeleteVolumeRequest.Builder b = DeleteVolumeRequest.newBuilder().setVolumeId(id);
      if (d.chance(20)) {
        b.putSecrets("password", secret(d));
      }
      return call(d, b.build(), send((DeleteVolumeRequest r) -> ctl().deleteVolume(r)));
    });
  }

  @Test
  void validateVolumeCapabilities() throws Exception {
    property(FuzzRpc.VALIDATE_VOLUME_CAPABILITIES, 4, d -> {
      ValidateVolumeCapabilitiesRequest.Builder b = ValidateVolumeCapabilitiesRequest.newBuilder()
          .setVolumeId(d.bad(0) ? d.badVolumeId("volume_id", world.idle.id()) : world.idle.id());
      if (d.bad(1)) {
        if (d.chance(20)) {
          d.fixed("volume_capabilities", "none", Code.INVALID_ARGUMENT);
        } else {
          VolumeCapability cap = d.badCapability("volume_capabilities[0]", world.idle.cap(), false, true, Against.CREATED);
          b.addVolumeCapabilities(cap == null ? VolumeCapability.getDefaultInstance() : cap);
        }
      } else {
        b.addVolumeCapabilities(world.idle.cap());
      }
      if (d.bad(2)) {
        b.putAllParameters(d.badParameters("parameters", true));
      }
      if (d.bad(3)) {
        b.putMutableParams("iops", "100");
        d.answeredInBand("mutable_parameters", "set (no MODIFY_VOLUME)");
      }
      ValidateVolumeCapabilitiesRequest request = b.build();
      // Confirmed means "all of this is supported": an unsupported capability must leave it unset, and
      // what the plugin did not check (parameters, mutable_parameters) must not be echoed as confirmed.
      return call(d, request, send((ValidateVolumeCapabilitiesRequest r) -> ctl().validateVolumeCapabilities(r)),
          r -> {
            ValidateVolumeCapabilitiesResponse v = (ValidateVolumeCapabilitiesResponse) r;
            if (!v.hasConfirmed()) {
              return true;
            }
            return !d.bad(1)
                && (!d.bad(2) || !v.getConfirmed().getParametersMap().keySet().stream()
                    .anyMatch(request.getParametersMap()::containsKey))
                && v.getConfirmed().getMutableParamsCount() == 0;
          });
    });
  }

  @Test
  void listVolumes() throws Exception {
    property(FuzzRpc.LIST_VOLUMES, 2, d -> {
      ListVolumesRequest.Builder b = ListVolumesRequest.newBuilder();
      if (d.bad(0)) {
        b.setMaxEntries(d.badMaxEntries("max_entries"));
      }
      if (d.bad(1)) {
        b.setStartingToken(d.badToken("starting_token"));
      }
      return call(d, b.build(), send((ListVolumesRequest r) -> ctl().listVolumes(r)));
    });
  }

  @Test
  void getCapacity() throws Exception {
    property(FuzzRpc.GET_CAPACITY, 3, d -> {
      GetCapacityRequest.Builder b = GetCapacityRequest.newBuilder();
      if (d.bad(0)) {
        VolumeCapability cap = d.badCapability("volume_capabilities[0]", Caps.mount("ext4"), false, true, Against.NOTHING);
        b.addVolumeCapabilities(cap == null ? VolumeCapability.getDefaultInstance() : cap);
      }
      if (d.bad(1)) {
        b.putAllParameters(d.badParameters("parameters", false));
      }
      if (d.bad(2)) {
        b.setAccessibleTopology(Topology.newBuilder().putSegments(d.pick("caravan.csi/node", "zone", ""),
            d.pick("other-node", "\0", "x".repeat(300))));
        d.answeredInBand("accessible_topology", "not this node");
      }
      return call(d, b.build(), send((GetCapacityRequest r) -> ctl().getCapacity(r)),
          r -> ((GetCapacityResponse) r).getAvailableCapacity() == 0);
    });
  }

  @Test
  void createSnapshot() throws Exception {
    property(FuzzRpc.CREATE_SNAPSHOT, 3, d -> {
      String source;
      if (!d.bad(0)) {
        source = world.idle.id();
      } else if (d.chance(20)) {
        source = world.block.id();
        d.invalid("source_volume_id", "another volume than the existing snapshot's");
      } else {
        source = d.badVolumeId("source_volume_id", world.idle.id());
      }
      // the name is the existing snapshot's (so a request right in every other field repeats it) or wrong
      CreateSnapshotRequest.Builder b = CreateSnapshotRequest.newBuilder().setSourceVolumeId(source)
          .setName(d.bad(1) ? d.badName("name") : world.snapshotName);
      if (d.bad(2)) {
        b.putAllParameters(d.badParameters("parameters", false));
      }
      if (d.chance(20)) {
        b.putSecrets("password", secret(d));
      }
      return call(d, b.build(), send((CreateSnapshotRequest r) -> ctl().createSnapshot(r)));
    });
  }

  @Test
  void deleteSnapshot() throws Exception {
    property(FuzzRpc.DELETE_SNAPSHOT, 1, d -> call(d, DeleteSnapshotRequest.newBuilder()
            .setSnapshotId(d.badSnapshotId("snapshot_id", world.snapshotId)).build(),
        send((DeleteSnapshotRequest r) -> ctl().deleteSnapshot(r))));
  }

  @Test
  void listSnapshots() throws Exception {
    property(FuzzRpc.LIST_SNAPSHOTS, 4, d -> {
      ListSnapshotsRequest.Builder b = ListSnapshotsRequest.newBuilder();
      if (d.bad(0)) {
        b.setMaxEntries(d.badMaxEntries("max_entries"));
      }
      if (d.bad(1)) {
        b.setStartingToken(d.badToken("starting_token"));
      }
      if (d.bad(2)) {
        String id = d.pick(world.absentSnapshotId(d.hex12()), "../" + world.snapshotId, "\0", "x".repeat(10 * 1024),
            world.idle.id());
        b.setSnapshotId(id);
        d.answeredInBand("snapshot_id", "matches no snapshot: '" + FuzzDraw.printable(id) + "'");
      }
      if (d.bad(3)) {
        String id = d.pick(world.absentVolumeId(d.hex12()), world.mounted.id(), "a/../b", "\0");
        b.setSourceVolumeId(id);
        d.answeredInBand("source_volume_id", "has no snapshot: '" + FuzzDraw.printable(id) + "'");
      }
      return call(d, b.build(), send((ListSnapshotsRequest r) -> ctl().listSnapshots(r)),
          r -> ((ListSnapshotsResponse) r).getEntriesCount() == 0);
    });
  }

  @Test
  void controllerExpandVolume() throws Exception {
    property(FuzzRpc.CONTROLLER_EXPAND_VOLUME, 3, d -> {
      FuzzWorld.Real idle = world.idle;
      ControllerExpandVolumeRequest.Builder b = ControllerExpandVolumeRequest.newBuilder()
          .setVolumeId(d.bad(0) ? d.badVolumeId("volume_id", idle.id()) : idle.id());
      if (!d.bad(1)) {
        b.setCapacityRange(Caps.bytes(idle.bytes()));
      } else if (d.chance(25)) {
        if (d.chance(50)) {
          d.fixed("capacity_range", "unset", Code.INVALID_ARGUMENT);
        } else {
          b.setCapacityRange(dev.caravan.csi.v1.CapacityRange.getDefaultInstance());
          d.fixed("capacity_range", "neither bound set", Code.INVALID_ARGUMENT);
        }
      } else {
        b.setCapacityRange(d.badCapacity("capacity_range", idle.bytes()));
      }
      if (d.bad(2)) {
        VolumeCapability cap = d.badCapability("volume_capability", idle.cap(), false, false, Against.CREATED);
        if (cap != null) {
          b.setVolumeCapability(cap);
        }
      }
      return call(d, b.build(), send((ControllerExpandVolumeRequest r) -> ctl().controllerExpandVolume(r)));
    });
  }

  @Test
  void controllerGetVolume() throws Exception {
    property(FuzzRpc.CONTROLLER_GET_VOLUME, 1, d -> call(d, ControllerGetVolumeRequest.newBuilder()
            .setVolumeId(d.badVolumeId("volume_id", world.idle.id())).build(),
        send((ControllerGetVolumeRequest r) -> ctl().controllerGetVolume(r))));
  }

  /** RPCs whose capability is not advertised answer UNIMPLEMENTED, whatever the request holds. */
  @Test
  void rpcsNotOffered() throws Exception {
    property(FuzzRpc.NOT_OFFERED, 1, d -> {
      d.fixed("rpc", "not offered", Code.UNIMPLEMENTED);
      String id = d.chance(50) ? world.mounted.id() : d.pick(world.absentVolumeId(d.hex12()), "", "\0", "../x");
      return switch (d.random.nextInt(4)) {
        case 0 -> call(d, ControllerPublishVolumeRequest.newBuilder().setVolumeId(id)
                .setNodeId(d.pick(PluginFixture.NODE, "", "other")).setVolumeCapability(world.mounted.cap()).build(),
            send((ControllerPublishVolumeRequest r) -> ctl().controllerPublishVolume(r)));
        case 1 -> call(d, ControllerUnpublishVolumeRequest.newBuilder().setVolumeId(id).setNodeId(PluginFixture.NODE).build(),
            send((ControllerUnpublishVolumeRequest r) -> ctl().controllerUnpublishVolume(r)));
        case 2 -> call(d, ControllerModifyVolumeRequest.newBuilder().setVolumeId(id).putMutableParameters("iops", "1").build(),
            send((ControllerModifyVolumeRequest r) -> ctl().controllerModifyVolume(r)));
        default -> call(d, GetSnapshotRequest.newBuilder().setSnapshotId(d.pick(world.snapshotId, "", "\0")).build(),
            send((GetSnapshotRequest r) -> ctl().getSnapshot(r)));
      };
    });
  }

  // ---- node RPCs -----------------------------------------------------------------------------------

  /** One of the staged and published volumes: the mount one or the block one. */
  private FuzzWorld.Real inUse(FuzzDraw d) {
    return d.chance(70) ? world.mounted : world.block;
  }

  @Test
  void nodeStageVolume() throws Exception {
    property(FuzzRpc.NODE_STAGE_VOLUME, 3, d -> {
      FuzzWorld.Real v = inUse(d);
      NodeStageVolumeRequest.Builder b = NodeStageVolumeRequest.newBuilder()
          .setVolumeId(d.bad(0) ? d.badVolumeId("volume_id", v.id()) : v.id())
          .setStagingTargetPath(d.bad(1) ? d.badPath("staging_target_path", PathUse.STAGE, v) : v.staging().toString());
      VolumeCapability cap = d.bad(2) ? d.badCapability("volume_capability", v.cap(), true, false) : v.cap();
      if (cap != null) {
        b.setVolumeCapability(cap);
      }
      if (d.chance(20)) {
        b.putSecrets("password", secret(d));
      }
      return call(d, b.build(), send((NodeStageVolumeRequest r) -> node().nodeStageVolume(r)));
    });
  }

  @Test
  void nodeUnstageVolume() throws Exception {
    property(FuzzRpc.NODE_UNSTAGE_VOLUME, 2, d -> {
      FuzzWorld.Real v = inUse(d);
      return call(d, NodeUnstageVolumeRequest.newBuilder()
              .setVolumeId(d.bad(0) ? d.badVolumeId("volume_id", v.id()) : v.id())
              .setStagingTargetPath(d.bad(1) ? d.badPath("staging_target_path", PathUse.UNSTAGE, v) : v.staging().toString())
              .build(),
          send((NodeUnstageVolumeRequest r) -> node().nodeUnstageVolume(r)));
    });
  }

  @Test
  void nodePublishVolume() throws Exception {
    property(FuzzRpc.NODE_PUBLISH_VOLUME, 5, d -> {
      FuzzWorld.Real v = inUse(d);
      NodePublishVolumeRequest.Builder b = NodePublishVolumeRequest.newBuilder()
          .setVolumeId(d.bad(0) ? d.badVolumeId("volume_id", v.id()) : v.id())
          .setStagingTargetPath(d.bad(1) ? d.badPath("staging_target_path", PathUse.PUBLISH_STAGING, v) : v.staging().toString())
          .setTargetPath(d.bad(2) ? d.badPath("target_path", PathUse.PUBLISH_TARGET, v) : v.target().toString());
      VolumeCapability cap = d.bad(3) ? d.badCapability("volume_capability", v.cap(), true, false) : v.cap();
      if (cap != null) {
        b.setVolumeCapability(cap);
      }
      if (d.bad(4)) {
        b.setReadonly(true);
        d.invalid("readonly", "true where the volume is published read-write");
      }
      if (d.chance(20)) {
        b.putSecrets("password", secret(d));
      }
      return call(d, b.build(), send((NodePublishVolumeRequest r) -> node().nodePublishVolume(r)));
    });
  }

  @Test
  void nodeUnpublishVolume() throws Exception {
    property(FuzzRpc.NODE_UNPUBLISH_VOLUME, 2, d -> {
      FuzzWorld.Real v = inUse(d);
      String target = d.bad(1) ? d.badPath("target_path", PathUse.UNPUBLISH, v) : v.target().toString();
      return call(d, NodeUnpublishVolumeRequest.newBuilder()
              .setVolumeId(d.bad(0) ? d.badVolumeId("volume_id", v.id()) : v.id())
              .setTargetPath(target)
              .build(),
          send((NodeUnpublishVolumeRequest r) -> node().nodeUnpublishVolume(r)));
    });
  }

  @Test
  void nodeGetVolumeStats() throws Exception {
    property(FuzzRpc.NODE_GET_VOLUME_STATS, 2, d -> {
      FuzzWorld.Real v = inUse(d);
      return call(d, NodeGetVolumeStatsRequest.newBuilder()
              .setVolumeId(d.bad(0) ? d.badVolumeId("volume_id", v.id()) : v.id())
              .setVolumePath(d.bad(1) ? d.badPath("volume_path", PathUse.VOLUME_PATH, v) : v.target().toString())
              .build(),
          send((NodeGetVolumeStatsRequest r) -> node().nodeGetVolumeStats(r)));
    });
  }

  @Test
  void nodeExpandVolume() throws Exception {
    property(FuzzRpc.NODE_EXPAND_VOLUME, 4, d -> {
      FuzzWorld.Real v = world.mounted;
      NodeExpandVolumeRequest.Builder b = NodeExpandVolumeRequest.newBuilder()
          .setVolumeId(d.bad(0) ? d.badVolumeId("volume_id", v.id()) : v.id())
          .setVolumePath(d.bad(1) ? d.badPath("volume_path", PathUse.VOLUME_PATH, v) : v.target().toString());
      if (d.bad(2)) {
        if (d.chance(40)) {
          b.setCapacityRange(Caps.bytes(v.bytes() + d.pick(4096L, 1L << 30, 1L << 60)));
          d.invalid("capacity_range", "above the device's size");
        } else {
          b.setCapacityRange(d.badCapacity("capacity_range", 0));
        }
      }
      if (d.bad(3)) {
        VolumeCapability cap = d.badCapability("volume_capability", v.cap(), false, false);
        if (cap != null) {
          b.setVolumeCapability(cap);
        }
      }
      return call(d, b.build(), send((NodeExpandVolumeRequest r) -> node().nodeExpandVolume(r)));
    });
  }
}
