package dev.caravan.csi.dhv;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.KeyCosts;
import dev.caravan.csi.support.Json;
import dev.caravan.csi.testing.RootLog;
import dev.caravan.csi.testing.TestClassPath;
import dev.caravan.csi.dhv.DhvEnv.Node;
import dev.caravan.csi.dhv.DhvEnv.Volume;
import dev.caravan.csi.dhv.NomadDhvRunner.Outcome;
import dev.caravan.storage.block.LoopDevice;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.crypt.Luks2;
import dev.caravan.storage.crypt.Mapping;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.Bytes;
import dev.caravan.storage.testing.HostRequirements;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The installed {@code caravan-file} and {@code caravan-file-deferred} executables, run as a Nomad
 * client runs them ({@link NomadDhvRunner}), against real loop devices, mkfs and mounts.
 */
class DhvPluginOnFileTest {
  private static final long MIB = 1L << 20;

  @TempDir Path work;
  private Path pluginDir;
  private Path dataDir;
  private Node nodeA;
  private Node nodeB;

  @BeforeEach
  void install() throws IOException {
    pluginDir = work.resolve("plugins");
    dataDir = work.resolve("data");
    nodeA = new Node(uuid(), work.resolve("nodeA/host_volumes"), pluginDir);
    nodeB = new Node(uuid(), work.resolve("nodeB/host_volumes"), pluginDir);
    new DhvInstaller(Path.of(System.getProperty("java.home"), "bin", "java"), TestClassPath.of(), dataDir, Map.of())
        .install(pluginDir, "file");
  }

  /** Whatever a failed test left mounted or attached under its directory goes, before the directory does. */
  @AfterEach
  void tearDown() throws IOException {
    if (!HostRequirements.isRoot()) {
      return;
    }
    List<MountEntry> mine = MountTable.read().stream().filter(m -> m.mountPoint().startsWith(work))
        .sorted(Comparator.comparing((MountEntry m) -> m.mountPoint().getNameCount()).reversed()).toList();
    for (MountEntry m : mine) {
      Mounts.unmount(m.mountPoint());
    }
    if (Luks2.unavailableReason().isEmpty()) {
      for (Path image : images()) {
        String mapping = Luks2.mappingName("caravan-file:" + image.toAbsolutePath());
        if (Luks2.status(mapping).open()) {
          Luks2.close(mapping);
        }
      }
    }
    for (LoopDevice d : LoopDevices.list()) {
      if (d.backingFile().toString().startsWith(work.toString())) {
        LoopDevices.detach(d);
      }
    }
  }

  // ---- discovery -------------------------------------------------------------------------------

  @Test
  void fingerprintIsAnsweredByTheWrapperAloneWithinNomadsSecond() throws IOException {
    // A launcher that does not exist: the answer can only come from the wrapper itself.
    Path noJvm = work.resolve("no-jvm");
    new DhvInstaller(Path.of("/nonexistent/bin/java"), "/nonexistent.jar", dataDir, Map.of()).install(noJvm, "file");
    for (String id : List.of("caravan-file", "caravan-file-deferred")) {
      Outcome o = NomadDhvRunner.run(noJvm.resolve(id), "fingerprint", DhvEnv.fingerprint(),
          NomadDhvRunner.FINGERPRINT_DEADLINE);
      assertThat(o.killed()).as("%s fingerprint within 1 s: %s", id, o).isFalse();
      assertThat(o.exitStatus()).as(o.toString()).isZero();
      Map<String, Object> json = o.json();
      assertThat((String) json.get("version")).matches("[0-9]+\\.[0-9]+\\.[0-9]+(-[0-9A-Za-z.-]+)?");
      assertThat(json.get("deferred_bind")).isEqualTo(id.endsWith("-deferred") ? Boolean.TRUE : null);
    }
    // ...and a real operation through it fails the way Nomad reports, not silently.
    Outcome create = NomadDhvRunner.run(noJvm.resolve("caravan-file"), "create",
        DhvEnv.create(nodeA, volume("x", 0)), NomadDhvRunner.OP_DEADLINE);
    assertThat(create.exitStatus()).isNotZero();
  }

  @Test
  void theExecutablesAreRegularFilesInsideThePluginDirectory() throws IOException {
    Path outside = work.resolve("outside");
    Files.writeString(outside, "not a plugin");
    Path plugin = pluginDir.resolve("caravan-file");
    Files.delete(plugin);
    Files.createSymbolicLink(plugin, outside);
    new DhvInstaller(Path.of(System.getProperty("java.home"), "bin", "java"), TestClassPath.of(), dataDir, Map.of())
        .install(pluginDir, "file");
    for (String id : List.of("caravan-file", "caravan-file-deferred")) {
      Path p = pluginDir.resolve(id);
      assertThat(Files.isSymbolicLink(p)).as(id).isFalse();
      assertThat(Files.isRegularFile(p)).as(id).isTrue();
      assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(p))).isEqualTo("rwxr-xr-x");
      assertThat(Files.readString(p)).startsWith("#!/bin/sh\n").contains("exec '" + System.getProperty("java.home"));
    }
    assertThat(Files.readString(outside)).as("the symlink was replaced, not followed").isEqualTo("not a plugin");
  }

  @Test
  void keyCostsGoIntoTheExecutablesAndOutOfRangeOnesAreRefusedNamingTheFlag() throws IOException {
    Path costly = work.resolve("costly");
    new DhvInstaller(Path.of(System.getProperty("java.home"), "bin", "java"), TestClassPath.of(), dataDir, Map.of(),
        Optional.empty(), KeyCosts.DEFAULT.withLuksIterTime(5).withLuksPbkdfMemory(65536)
            .withZfs(KeyCosts.zfsPbkdf2Iters(200000)))
        .install(costly, "file");
    assertThat(Files.readString(costly.resolve("caravan-file"))).contains("'--luks-iter-time' '5'")
        .contains("'--luks-pbkdf-memory' '65536'").contains("'--zfs-pbkdf2-iters' '200000'");
    assertThat(Files.readString(pluginDir.resolve("caravan-file"))).as("the default costs are not written out")
        .doesNotContain("--luks-iter-time").doesNotContain("--luks-pbkdf-memory").doesNotContain("--zfs-pbkdf2-iters");

    Map<String, String> env = DhvEnv.create(nodeA, volume("costed", 16 * MIB));
    for (List<String> flag : List.of(List.of("--luks-iter-time", "0"), List.of("--luks-iter-time", "fast"),
        List.of("--luks-pbkdf-memory", "31"), List.of("--luks-pbkdf-memory", "4194305"),
        List.of("--zfs-pbkdf2-iters", "99999"))) {
      InProcess refused = inProcess("immediate", env, flag);
      assertThat(refused.status()).as(refused.toString()).isEqualTo(DhvException.INVALID);
      assertThat(refused.stdout()).as(refused.toString()).contains(flag.get(0) + (flag.get(1).equals("fast")
          ? ": 'fast' is not a whole number" : " '" + flag.get(1) + "' must be"));
    }
    assertThat(images()).as("a refused call makes nothing").isEmpty();
  }

  // ---- immediate mode --------------------------------------------------------------------------

  @Test
  void createRecreateGrowDeleteDeleteAgain() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    Volume v = volume("db data/../../etc", 32 * MIB); // the name never reaches a path
    Outcome created = create(nodeA, v);
    Path path = nodeA.volumesDir().resolve(v.id());
    assertThat(created.json()).containsEntry("path", path.toString()).containsEntry("bytes", 32 * MIB);
    assertThat(MountTable.isMountPoint(path)).isTrue();
    Files.writeString(path.resolve("data.txt"), "kept");

    Outcome again = create(nodeA, v);
    assertThat(again.json()).isEqualTo(created.json());
    assertThat(Files.readString(path.resolve("data.txt"))).isEqualTo("kept");

    long before = Filesystems.stats(path).totalBytes();
    Outcome grown = create(nodeA, v.withMin(96 * MIB));
    assertThat(grown.json()).containsEntry("path", path.toString()).containsEntry("bytes", 96 * MIB);
    assertThat(Filesystems.stats(path).totalBytes()).as("the filesystem grew with the volume").isGreaterThan(before * 2);
    assertThat(Files.readString(path.resolve("data.txt"))).isEqualTo("kept");
    assertThat(create(nodeA, v).json()).as("a smaller min later is no shrink").containsEntry("bytes", 96 * MIB);

    Outcome deleted = ok(NomadDhvRunner.run(exe("caravan-file"), "delete", DhvEnv.delete(nodeA, v, path.toString()),
        NomadDhvRunner.OP_DEADLINE));
    assertThat(deleted.exitStatus()).isZero();
    assertThat(MountTable.isMountPoint(path)).isFalse();
    assertThat(path).doesNotExist();
    assertThat(images()).isEmpty();
    assertThat(loopsUnderWork()).isEmpty();
    Outcome deletedAgain = NomadDhvRunner.run(exe("caravan-file"), "delete", DhvEnv.delete(nodeA, v, path.toString()),
        NomadDhvRunner.OP_DEADLINE);
    assertThat(deletedAgain.exitStatus()).as(deletedAgain.toString()).isZero();
  }

  @Test
  void theAutoDeleteAfterAFailedCreateRemovesOnlyItsOwnVolume() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    Volume a = volume("a", 16 * MIB);
    Volume b = volume("b", 16 * MIB);
    Volume c = volume("c", 16 * MIB);
    for (Volume v : List.of(a, b, c)) {
      create(nodeA, v);
      Files.writeString(nodeA.volumesDir().resolve(v.id()).resolve("owner"), v.name());
    }
    Outcome auto = NomadDhvRunner.run(exe("caravan-file"), "delete", DhvEnv.autoDelete(nodeA, c),
        NomadDhvRunner.OP_DEADLINE);
    assertThat(auto.exitStatus()).as(auto.toString()).isZero();
    assertThat(nodeA.volumesDir().resolve(c.id())).doesNotExist();
    for (Volume v : List.of(a, b)) {
      Path p = nodeA.volumesDir().resolve(v.id());
      assertThat(MountTable.isMountPoint(p)).as(v.name()).isTrue();
      assertThat(Files.readString(p.resolve("owner"))).isEqualTo(v.name());
    }
    assertThat(images()).hasSize(2);
    // The same call for an id this node never created touches nothing either.
    Outcome unknown = NomadDhvRunner.run(exe("caravan-file"), "delete", DhvEnv.autoDelete(nodeA, volume("d", 0)),
        NomadDhvRunner.OP_DEADLINE);
    assertThat(unknown.exitStatus()).as(unknown.toString()).isZero();
    assertThat(images()).hasSize(2);
    try (Stream<Path> left = Files.list(nodeA.volumesDir())) {
      assertThat(left.count()).isEqualTo(2);
    }
  }

  @Test
  void theAgentStartCreateRestoresWhatARebootTookDown() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    Volume v = volume("restored", 16 * MIB);
    Outcome created = create(nodeA, v);
    Path path = nodeA.volumesDir().resolve(v.id());
    Files.writeString(path.resolve("data.txt"), "survives");
    rebootBehindThePluginsBack(path);

    Outcome restored = create(nodeA, v);
    assertThat(restored.json()).isEqualTo(created.json());
    assertThat(MountTable.isMountPoint(path)).isTrue();
    assertThat(Files.readString(path.resolve("data.txt"))).isEqualTo("survives");
    assertThat(loopsUnderWork()).hasSize(1);
  }

  @Test
  void concurrentRestoresAtAgentStartEachFinishOnce() throws Exception {
    HostRequirements.assumeLoopAndExt4();
    List<Volume> volumes = List.of(volume("r1", 16 * MIB), volume("r2", 16 * MIB), volume("r3", 16 * MIB));
    for (Volume v : volumes) {
      create(nodeA, v);
      Files.writeString(nodeA.volumesDir().resolve(v.id()).resolve("name"), v.name());
    }
    for (Volume v : volumes) {
      rebootBehindThePluginsBack(nodeA.volumesDir().resolve(v.id()));
    }
    // Nomad restores every volume at once; a second agent start racing the first doubles each call.
    List<Callable<Outcome>> calls = new ArrayList<>();
    for (Volume v : volumes) {
      for (int i = 0; i < 2; i++) {
        calls.add(() -> NomadDhvRunner.run(exe("caravan-file"), "create", DhvEnv.create(nodeA, v),
            NomadDhvRunner.OP_DEADLINE));
      }
    }
    List<Outcome> outcomes = new ArrayList<>();
    try (ExecutorService pool = Executors.newFixedThreadPool(calls.size())) {
      for (Future<Outcome> f : pool.invokeAll(calls)) {
        outcomes.add(f.get());
      }
    }
    for (Outcome o : outcomes) {
      assertThat(o.exitStatus()).as(o.toString()).isZero();
    }
    for (Volume v : volumes) {
      Path p = nodeA.volumesDir().resolve(v.id());
      assertThat(MountTable.at(p)).as("mounted once at " + p).isPresent();
      assertThat(MountTable.stackedAt(MountTable.read(), p)).hasSize(1);
      assertThat(Files.readString(p.resolve("name"))).isEqualTo(v.name());
    }
    assertThat(loopsUnderWork()).hasSize(3);
  }

  @Test
  void aCreateKilledAtItsDeadlineIsFinishedByTheNextOne() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    Volume v = volume("killed", 16 * MIB);
    boolean sawKill = false;
    for (long ms : List.of(400L, 900L, 1400L, 1900L, 2400L)) {
      Outcome o = NomadDhvRunner.run(exe("caravan-file"), "create", DhvEnv.create(nodeA, v), Duration.ofMillis(ms));
      if (o.killed()) {
        sawKill = true;
        assertThat(o.stdoutClosed()).as("the JVM is the direct child: its SIGKILL closes stdout").isTrue();
      }
    }
    assertThat(sawKill).as("at least one run was killed at its deadline").isTrue();
    Outcome finished = create(nodeA, v);
    Path path = nodeA.volumesDir().resolve(v.id());
    assertThat(finished.json()).containsEntry("path", path.toString()).containsEntry("bytes", 16 * MIB);
    assertThat(MountTable.stackedAt(MountTable.read(), path)).hasSize(1);
    assertThat(loopsUnderWork()).hasSize(1);
    ok(NomadDhvRunner.run(exe("caravan-file"), "delete", DhvEnv.delete(nodeA, v, path.toString()),
        NomadDhvRunner.OP_DEADLINE));
    assertThat(images()).isEmpty();
    assertThat(loopsUnderWork()).isEmpty();
  }

  @Test
  void aDeleteAfterACreateKilledAnywhereLeavesNothing() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    for (long ms : List.of(700L, 1100L, 1500L)) {
      Volume v = volume("cut-" + ms, 16 * MIB);
      Path path = nodeA.volumesDir().resolve(v.id());
      NomadDhvRunner.run(exe("caravan-file"), "create", DhvEnv.create(nodeA, v), Duration.ofMillis(ms));
      ok(NomadDhvRunner.run(exe("caravan-file"), "delete", DhvEnv.delete(nodeA, v, path.toString()),
          NomadDhvRunner.OP_DEADLINE));
      assertThat(MountTable.isMountPoint(path)).as("after a kill at %d ms", ms).isFalse();
      assertThat(path).as("after a kill at %d ms", ms).doesNotExist();
      assertThat(images()).as("after a kill at %d ms", ms).isEmpty();
      assertThat(loopsUnderWork()).as("after a kill at %d ms", ms).isEmpty();
      assertThat(dataDir.resolve("dhv/volumes").resolve(v.id() + ".properties")).doesNotExist();
    }
  }

  @Test
  void aFirstCreateThatFailsRemovesWhatItMade() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    Volume v = volume("blocked", 16 * MIB);
    Path path = nodeA.volumesDir().resolve(v.id());
    Path elsewhere = Files.createDirectories(work.resolve("elsewhere"));
    Files.createDirectories(nodeA.volumesDir());
    Files.createSymbolicLink(path, elsewhere);
    Outcome failed = NomadDhvRunner.run(exe("caravan-file"), "create", DhvEnv.create(nodeA, v),
        NomadDhvRunner.OP_DEADLINE);
    assertThat(failed.exitStatus()).as(failed.toString()).isEqualTo(DhvException.FAILED);
    assertThat((String) failed.json().get("error")).contains("is a symbolic link");
    assertThat(images()).as("Nomad never deletes a failed create: the plugin must").isEmpty();
    assertThat(loopsUnderWork()).isEmpty();
    assertThat(dataDir.resolve("dhv/volumes").resolve(v.id() + ".properties")).doesNotExist();
    assertThat(Files.isSymbolicLink(path)).as("not the plugin's to remove").isTrue();
    assertThat(MountTable.isMountPoint(elsewhere)).isFalse();
  }

  @Test
  void aFailedCreateNeverDestroysAVolumeItFoundHoldingData() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    Volume v = volume("found", 16 * MIB);
    Outcome created = create(nodeA, v);
    Path path = nodeA.volumesDir().resolve(v.id());
    Files.writeString(path.resolve("data.txt"), "kept");
    rebootBehindThePluginsBack(path);
    // The plugin's own state is gone (a data directory restored from before the create); the image is not.
    Trees.delete(dataDir.resolve("dhv"));
    // The agent-start create's mount fails once.
    Files.delete(path);
    Files.createSymbolicLink(path, Files.createDirectories(work.resolve("elsewhere")));
    Outcome failed = run("caravan-file", "create", DhvEnv.create(nodeA, v));
    assertThat(failed.exitStatus()).as(failed.toString()).isEqualTo(DhvException.FAILED);
    assertThat(images()).as("the create found the volume, so its failure removes nothing").hasSize(1);

    Files.delete(path);
    Outcome retried = create(nodeA, v);
    assertThat(retried.json()).isEqualTo(created.json());
    assertThat(Files.readString(path.resolve("data.txt"))).isEqualTo("kept");
    assertThat(loopsUnderWork()).hasSize(1);
  }

  @Test
  void parametersAreCheckedAndTheRootGetsModeAndOwner() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    Volume bad = volume("bad", 16 * MIB).withParameters("{\"compression\":\"lz4\"}");
    Outcome refused = NomadDhvRunner.run(exe("caravan-file"), "create", DhvEnv.create(nodeA, bad),
        NomadDhvRunner.OP_DEADLINE);
    assertThat(refused.exitStatus()).as(refused.toString()).isEqualTo(DhvException.INVALID);
    assertThat((String) refused.json().get("error"))
        .contains("'compression' is not known").contains("fsType, gid, mode, uid");
    assertThat(images()).isEmpty();
    // Replication is the CSI plugins' (over their peer channel): a host volume has no replicas.
    Outcome replicated = NomadDhvRunner.run(exe("caravan-file"), "create",
        DhvEnv.create(nodeA, volume("bad", 16 * MIB).withParameters("{\"replicas\":\"1\"}")), NomadDhvRunner.OP_DEADLINE);
    assertThat(replicated.exitStatus()).as(replicated.toString()).isEqualTo(DhvException.INVALID);
    assertThat((String) replicated.json().get("error")).contains("'replicas' is not known")
        .doesNotContain("replicationInterval");
    assertThat(images()).isEmpty();

    Map<String, String> traversal = DhvEnv.create(nodeA, volume("t", 16 * MIB));
    traversal.put("DHV_VOLUME_ID", "../../../etc");
    Outcome noId = NomadDhvRunner.run(exe("caravan-file"), "create", traversal, NomadDhvRunner.OP_DEADLINE);
    assertThat(noId.exitStatus()).isEqualTo(DhvException.INVALID);
    assertThat((String) noId.json().get("error")).contains("DHV_VOLUME_ID").contains("not a Nomad UUID");

    Outcome publishHere = NomadDhvRunner.run(exe("caravan-file"), "publish",
        DhvEnv.publish(nodeA, bad, uuid(), "single-node-writer", false), NomadDhvRunner.OP_DEADLINE);
    assertThat(publishHere.exitStatus()).isEqualTo(DhvException.INVALID);
    assertThat((String) publishHere.json().get("error")).contains("only in deferred mode");

    Volume owned = volume("owned", 16 * MIB)
        .withParameters("{\"fsType\":\"ext4\",\"gid\":\"1001\",\"mode\":\"0750\",\"uid\":\"1000\"}");
    create(nodeA, owned);
    Path root = nodeA.volumesDir().resolve(owned.id());
    assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(root))).isEqualTo("rwxr-x---");
    assertThat(Files.getAttribute(root, "unix:uid")).isEqualTo(1000);
    assertThat(Files.getAttribute(root, "unix:gid")).isEqualTo(1001);

    Volume otherFs = owned.withParameters("{\"fsType\":\"xfs\"}");
    Outcome changed = NomadDhvRunner.run(exe("caravan-file"), "create", DhvEnv.create(nodeA, otherFs),
        NomadDhvRunner.OP_DEADLINE);
    assertThat(changed.exitStatus()).as(changed.toString()).isEqualTo(DhvException.INVALID);
    assertThat((String) changed.json().get("error")).contains("ext4").contains("xfs");
    assertThat(MountTable.isMountPoint(root)).isTrue();
  }

  // ---- deferred mode ---------------------------------------------------------------------------

  @Test
  void deferredVolumesMoveBetweenNodesWithOneWriterAtATime() throws IOException {
    HostRequirements.assumeLoopAndExt4();
    Volume v = volume("shared", 16 * MIB);
    Outcome created = ok(run("caravan-file-deferred", "create", DhvEnv.create(nodeA, v)));
    assertThat(created.json()).containsOnlyKeys("bytes").containsEntry("bytes", 16 * MIB);
    assertThat(loopsUnderWork()).as("create binds nothing to a node").isEmpty();
    assertThat(images()).hasSize(1);

    Outcome onA = ok(run("caravan-file-deferred", "publish", DhvEnv.publish(nodeA, v, uuid(), "single-node-writer", false)));
    Path pathA = nodeA.volumesDir().resolve(v.id());
    assertThat(onA.json()).containsEntry("path", pathA.toString()).containsEntry("bytes", 16 * MIB);
    Files.writeString(pathA.resolve("data.txt"), "written on A");
    ok(run("caravan-file-deferred", "unpublish", DhvEnv.unpublish(nodeA, v, uuid())));
    assertThat(MountTable.isMountPoint(pathA)).isFalse();
    assertThat(loopsUnderWork()).isEmpty();

    Outcome onB = ok(run("caravan-file-deferred", "publish", DhvEnv.publish(nodeB, v, uuid(), "single-node-writer", false)));
    Path pathB = nodeB.volumesDir().resolve(v.id());
    assertThat(onB.json()).containsEntry("path", pathB.toString());
    assertThat(Files.readString(pathB.resolve("data.txt"))).isEqualTo("written on A");
    rebootBehindThePluginsBack(pathB);
    ok(run("caravan-file-deferred", "publish", DhvEnv.publish(nodeB, v, uuid(), "single-node-writer", false)));
    assertThat(Files.readString(pathB.resolve("data.txt"))).as("the agent-start publish restores it").isEqualTo("written on A");
    Outcome otherSetting = run("caravan-file-deferred", "publish", DhvEnv.publish(nodeB, v, uuid(), "single-node-reader-only", true));
    assertThat(otherSetting.exitStatus()).as(otherSetting.toString()).isEqualTo(DhvException.INVALID);
    Map<String, String> block = DhvEnv.publish(nodeB, v, uuid(), "single-node-writer", false);
    block.put("DHV_ATTACHMENT_MODE", "block-device");
    Outcome blockRefused = run("caravan-file-deferred", "publish", block);
    assertThat(blockRefused.exitStatus()).as(blockRefused.toString()).isEqualTo(DhvException.INVALID);
    assertThat((String) blockRefused.json().get("error")).contains("DHV_ATTACHMENT_MODE");

    Outcome refused = run("caravan-file-deferred", "publish", DhvEnv.publish(nodeA, v, uuid(), "single-node-writer", false));
    assertThat(refused.exitStatus()).as(refused.toString()).isEqualTo(DhvException.HELD_ELSEWHERE);
    assertThat((String) refused.json().get("error")).contains("published on node " + nodeB.id());
    assertThat(MountTable.isMountPoint(pathA)).isFalse();

    Outcome deleteWhileHeld = run("caravan-file-deferred", "delete", DhvEnv.delete(nodeB, v, ""));
    assertThat(deleteWhileHeld.exitStatus()).as(deleteWhileHeld.toString()).isEqualTo(DhvException.FAILED);
    assertThat(Files.readString(pathB.resolve("data.txt"))).isEqualTo("written on A");

    long before = Filesystems.stats(pathB).totalBytes();
    Outcome grown = ok(run("caravan-file-deferred", "create", DhvEnv.create(nodeB, v.withMin(48 * MIB))));
    assertThat(grown.json()).containsEntry("bytes", 48 * MIB);
    assertThat(Filesystems.stats(pathB).totalBytes()).as("grown at once where published").isGreaterThan(before * 2);
    assertThat(Files.readString(pathB.resolve("data.txt"))).isEqualTo("written on A");
    Outcome grownElsewhere = ok(run("caravan-file-deferred", "create", DhvEnv.create(nodeA, v.withMin(64 * MIB))));
    assertThat(grownElsewhere.json()).containsEntry("bytes", 64 * MIB);
    ok(run("caravan-file-deferred", "unpublish", DhvEnv.unpublish(nodeB, v, uuid())));
    ok(run("caravan-file-deferred", "unpublish", DhvEnv.unpublish(nodeB, v, uuid())));
    ok(run("caravan-file-deferred", "publish", DhvEnv.publish(nodeA, v, uuid(), "single-node-writer", false)));
    assertThat(Filesystems.stats(pathA).totalBytes()).as("grown at the next publish").isGreaterThan(56 * MIB);
    ok(run("caravan-file-deferred", "unpublish", DhvEnv.unpublish(nodeA, v, uuid())));
    ok(run("caravan-file-deferred", "publish", DhvEnv.publish(nodeA, v, uuid(), "single-node-reader-only", true)));
    assertThat(Files.readString(pathA.resolve("data.txt"))).isEqualTo("written on A");
    assertThat(MountTable.at(pathA).orElseThrow().mountOptions().split(",")).contains("ro");
    ok(run("caravan-file-deferred", "unpublish", DhvEnv.unpublish(nodeA, v, uuid())));

    ok(run("caravan-file-deferred", "delete", DhvEnv.delete(nodeA, v, "")));
    assertThat(images()).isEmpty();
    ok(run("caravan-file-deferred", "delete", DhvEnv.delete(nodeA, v, "")));
    assertThat(pathA).doesNotExist();
    assertThat(pathB).doesNotExist();
  }

  @Test
  void concurrentPublishesOnTwoNodesLetExactlyOneWin() throws Exception {
    HostRequirements.assumeLoopAndExt4();
    Volume v = volume("contended", 16 * MIB);
    ok(run("caravan-file-deferred", "create", DhvEnv.create(nodeA, v)));
    List<Callable<Outcome>> calls = List.of(
        () -> run("caravan-file-deferred", "publish", DhvEnv.publish(nodeA, v, uuid(), "single-node-writer", false)),
        () -> run("caravan-file-deferred", "publish", DhvEnv.publish(nodeB, v, uuid(), "single-node-writer", false)));
    List<Outcome> outcomes = new ArrayList<>();
    try (ExecutorService pool = Executors.newFixedThreadPool(2)) {
      for (Future<Outcome> f : pool.invokeAll(calls)) {
        outcomes.add(f.get());
      }
    }
    assertThat(outcomes).as(outcomes.toString()).extracting(Outcome::exitStatus)
        .containsExactlyInAnyOrder(0, DhvException.HELD_ELSEWHERE);
    long mounted = Stream.of(nodeA, nodeB).filter(n -> MountTable.isMountPoint(n.volumesDir().resolve(v.id()))).count();
    assertThat(mounted).isEqualTo(1);
    Node winner = outcomes.get(0).exitStatus() == 0 ? nodeA : nodeB;
    ok(run("caravan-file-deferred", "unpublish", DhvEnv.unpublish(winner, v, uuid())));
    ok(run("caravan-file-deferred", "delete", DhvEnv.delete(winner, v, "")));
    assertThat(loopsUnderWork()).isEmpty();
  }

  // ---- encryption (LUKS2: dm-crypt, the guest) ------------------------------------------------

  /**
   * {@code encryption=on} through the DHV plugin: LUKS2 on the loop device under the passphrase of the
   * plugin's file. Immediate mode: the create mounts the mapping; what a reboot takes down (mount,
   * mapping, loop device), the agent-start create puts back with the file's passphrase; a file that
   * holds another passphrase, or none at all, is refused naming the file, never a passphrase, and the
   * volume is kept. The operations run in this JVM through {@link DhvMain#run}, the entry point the
   * executable {@code exec}s (the executable itself is tested above): a JVM start per operation costs
   * tens of seconds under the guest's emulated CPU.
   */
  @Test
  void anEncryptedVolumeIsLuks2UnderThePassphraseFileAndLeavesNoMappingBehind() throws IOException {
    HostRequirements.assumeDmCrypt();
    String passphrase = "dhv-file-passphrase-Hy62";
    String wrong = "not-the-dhv-passphrase-Lp07";
    Path keyFile = keyFile(passphrase);
    Volume v = volume("secret", 32 * MIB).withParameters("{\"encryption\":\"on\"}");
    Path path = nodeA.volumesDir().resolve(v.id());
    List<String> answers = new ArrayList<>();
    try (RootLog log = RootLog.capture()) {
      Map<String, Object> created = inProcessOk("immediate", DhvEnv.create(nodeA, v), keyFile);
      assertThat(created).containsEntry("path", path.toString()).containsEntry("bytes", 32 * MIB);
      Path image = images().getFirst();
      String mapping = Luks2.mappingName("caravan-file:" + image.toAbsolutePath());
      Mapping open = Luks2.status(mapping);
      assertThat(open.open()).as("the LUKS2 mapping is open").isTrue();
      assertThat(open.sizeBytes()).as("the mapping holds the capacity asked for").isEqualTo(32 * MIB);
      assertThat(Probe.probe(open.device().orElseThrow()).type()).contains("crypto_LUKS");
      assertThat(MountTable.at(path).orElseThrow().source()).as("mounted from the mapping")
          .isIn("/dev/mapper/" + mapping, "/dev/" + dmName(mapping));
      byte[] plain = "written through the DHV mapping, never plain on disk".getBytes(StandardCharsets.UTF_8);
      Files.write(path.resolve("data.txt"), plain);

      rebootEncrypted(path, mapping);
      assertThat(Bytes.contains(Files.readAllBytes(image), plain)).as("plaintext in the image").isFalse();

      // The agent-start create with a file that holds another passphrase, then with no file at all.
      Files.writeString(keyFile, wrong + "\n");
      InProcess refused = inProcess("immediate", DhvEnv.create(nodeA, v), keyFile);
      answers.add(refused.stdout());
      assertThat(refused.status()).as(refused.toString()).isNotZero();
      assertThat(refused.stdout()).contains("passphrase file " + keyFile).doesNotContain(wrong);
      Files.delete(keyFile);
      InProcess missing = inProcess("immediate", DhvEnv.create(nodeA, v), keyFile);
      answers.add(missing.stdout());
      assertThat(missing.status()).as(missing.toString()).isEqualTo(DhvException.INVALID);
      assertThat(missing.stdout()).contains("passphrase file " + keyFile, "no such file");
      assertThat(images()).as("a refused restore keeps the volume").containsExactly(image);
      assertThat(Luks2.status(mapping).open()).as("a refused restore opens nothing").isFalse();
      assertThat(MountTable.isMountPoint(path)).isFalse();
      // The loop device the refused restore attached stays: the plugin's node journal still records the
      // volume as staged here, as it was before the reboot. The next create uses it; the delete detaches it.
      assertThat(loopsUnderWork()).hasSizeLessThanOrEqualTo(1);

      keyFile(passphrase);
      assertThat(inProcessOk("immediate", DhvEnv.create(nodeA, v), keyFile)).isEqualTo(created);
      assertThat(Files.readAllBytes(path.resolve("data.txt"))).isEqualTo(plain);
      assertThat(loopsUnderWork()).hasSize(1);

      inProcessOk("immediate", DhvEnv.delete(nodeA, v, path.toString()), keyFile);
      assertThat(Luks2.status(mapping).open()).as("no mapping left after the delete").isFalse();
      assertThat(loopsUnderWork()).isEmpty();
      assertThat(images()).isEmpty();
      assertThat(path).doesNotExist();
      assertThat(log.text()).as("the plugin's log").doesNotContain(passphrase).doesNotContain(wrong)
          .contains("volume " + v.id());
    }
    assertThat(answers).noneMatch(a -> a.contains(passphrase));
    for (Path dir : List.of(dataDir, pluginDir)) {
      assertThat(filesContaining(dir, passphrase)).as("files under %s holding the passphrase", dir).isEmpty();
    }
  }

  @Test
  void anEncryptedVolumesPassphraseRotatesAtItsNextMountWithThePreviousOneBesideTheFile() throws IOException {
    HostRequirements.assumeDmCrypt();
    String first = "dhv-first-passphrase-Tz58";
    String second = "dhv-second-passphrase-Mv26";
    String wrong = "neither-dhv-passphrase-Qa13";
    String wrongToo = "nor-this-dhv-passphrase-Bn40";
    Path keyFile = keyFile(first);
    Path previous = PassphraseFile.previous(keyFile);
    Volume v = volume("rotated", 32 * MIB).withParameters("{\"encryption\":\"on\"}");
    Path path = nodeA.volumesDir().resolve(v.id());
    List<String> answers = new ArrayList<>();
    try (RootLog log = RootLog.capture()) {
      Map<String, Object> created = inProcessOk("immediate", DhvEnv.create(nodeA, v), keyFile);
      String mapping = Luks2.mappingName("caravan-file:" + images().getFirst().toAbsolutePath());
      byte[] plain = "written before the passphrase changed".getBytes(StandardCharsets.UTF_8);
      Files.write(path.resolve("data.txt"), plain);
      rebootEncrypted(path, mapping);

      // Neither file opens the volume: refused naming both files, and nothing opened or changed.
      keyFile(wrong);
      ownerOnly(previous, wrongToo);
      InProcess neither = inProcess("immediate", DhvEnv.create(nodeA, v), keyFile);
      answers.add(neither.stdout());
      assertThat(neither.status()).as(neither.toString()).isNotZero();
      assertThat(neither.stdout()).contains("neither passphrase file " + keyFile + " nor " + previous)
          .doesNotContain(wrong).doesNotContain(wrongToo);
      assertThat(Luks2.status(mapping).open()).as("a refused mount opens nothing").isFalse();

      // The rotation: the new passphrase in the file, the one it replaces beside it.
      keyFile(second);
      ownerOnly(previous, first);
      assertThat(inProcessOk("immediate", DhvEnv.create(nodeA, v), keyFile)).isEqualTo(created);
      assertThat(Files.readAllBytes(path.resolve("data.txt"))).isEqualTo(plain);
      rebootEncrypted(path, mapping);

      // Done: the new passphrase alone opens the volume, the one it replaced no longer does.
      Files.delete(previous);
      assertThat(inProcessOk("immediate", DhvEnv.create(nodeA, v), keyFile)).isEqualTo(created);
      assertThat(Files.readAllBytes(path.resolve("data.txt"))).isEqualTo(plain);
      rebootEncrypted(path, mapping);
      keyFile(first);
      InProcess old = inProcess("immediate", DhvEnv.create(nodeA, v), keyFile);
      answers.add(old.stdout());
      assertThat(old.status()).as("the replaced passphrase: " + old).isNotZero();
      assertThat(old.stdout()).contains("passphrase file " + keyFile).doesNotContain(first);
      assertThat(Luks2.status(mapping).open()).isFalse();

      keyFile(second);
      assertThat(inProcessOk("immediate", DhvEnv.create(nodeA, v), keyFile)).isEqualTo(created);
      assertThat(Files.readAllBytes(path.resolve("data.txt"))).isEqualTo(plain);
      inProcessOk("immediate", DhvEnv.delete(nodeA, v, path.toString()), keyFile);
      assertThat(Luks2.status(mapping).open()).as("no mapping left after the delete").isFalse();
      assertThat(loopsUnderWork()).isEmpty();
      assertThat(images()).isEmpty();
      for (String p : List.of(first, second, wrong, wrongToo)) {
        assertThat(log.text()).as("the plugin's log").doesNotContain(p);
        assertThat(answers).noneMatch(a -> a.contains(p));
        for (Path dir : List.of(dataDir, pluginDir)) {
          assertThat(filesContaining(dir, p)).as("files under %s holding a passphrase", dir).isEmpty();
        }
      }
    }
  }

  // ---- helpers ---------------------------------------------------------------------------------

  private Path exe(String id) {
    return pluginDir.resolve(id);
  }

  private Outcome run(String id, String op, Map<String, String> env) {
    return NomadDhvRunner.run(exe(id), op, env, NomadDhvRunner.OP_DEADLINE);
  }

  private Outcome create(Node n, Volume v) {
    return ok(run("caravan-file", "create", DhvEnv.create(n, v)));
  }

  private static Outcome ok(Outcome o) {
    assertThat(o.exitStatus()).as(o.toString()).isZero();
    return o;
  }

  /** The passphrase file of an encrypted volume, owner-only, written afresh with {@code passphrase}. */
  private Path keyFile(String passphrase) throws IOException {
    return ownerOnly(Files.createDirectories(work.resolve("keys")).resolve("dhv.key"), passphrase);
  }

  private static Path ownerOnly(Path f, String passphrase) throws IOException {
    Files.writeString(f, passphrase + "\n");
    Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-------"));
    return f;
  }

  /** What a reboot does to an encrypted volume: its mount, mapping and loop device are gone; the image stays. */
  private void rebootEncrypted(Path mountPoint, String mapping) {
    assertThat(Mounts.unmount(mountPoint)).isTrue();
    Luks2.close(mapping);
    loopsUnderWork().forEach(LoopDevices::detach);
  }

  private record InProcess(int status, String stdout) {}

  /**
   * One operation through {@link DhvMain#run}, with the executable's arguments and a passphrase file;
   * the least key slot work allowed, as every test suite (TestBackend's key costs).
   */
  private InProcess inProcess(String mode, Map<String, String> env, Path keyFile) {
    return inProcess(mode, env, List.of("--passphrase-file", keyFile.toString(), "--luks-iter-time", "1",
        "--luks-pbkdf-memory", "32"));
  }

  /** One operation through {@link DhvMain#run}, with the executable's arguments and {@code more}. */
  private InProcess inProcess(String mode, Map<String, String> env, List<String> more) {
    List<String> args = new ArrayList<>(List.of("--driver", "file", "--mode", mode, "--data-dir", dataDir.toString()));
    args.addAll(more);
    args.add(env.get("DHV_OPERATION"));
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int status;
    try (PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8)) {
      status = DhvMain.run(args.toArray(String[]::new), env, ps);
    }
    return new InProcess(status, out.toString(StandardCharsets.UTF_8).strip());
  }

  @SuppressWarnings("unchecked") // the plugin's answer is one JSON object
  private Map<String, Object> inProcessOk(String mode, Map<String, String> env, Path keyFile) {
    InProcess o = inProcess(mode, env, keyFile);
    assertThat(o.status()).as(o.toString()).isZero();
    return (Map<String, Object>) Json.parse(o.stdout());
  }

  /** Every regular file below {@code root} whose bytes hold {@code text}. */
  private static List<Path> filesContaining(Path root, String text) throws IOException {
    byte[] needle = text.getBytes(StandardCharsets.UTF_8);
    List<Path> found = new ArrayList<>();
    try (Stream<Path> files = Files.walk(root)) {
      for (Path f : files.filter(Files::isRegularFile).toList()) {
        if (Bytes.contains(Files.readAllBytes(f), needle)) {
          found.add(f);
        }
      }
    }
    return found;
  }

  /** The kernel's dm-N name of a mapping, as the mount table may show it. */
  private static String dmName(String mapping) throws IOException {
    Path link = Path.of("/dev/mapper", mapping);
    return Files.isSymbolicLink(link) ? Files.readSymbolicLink(link).getFileName().toString() : mapping;
  }

  /** What a reboot does to a volume: its mount and its loop device are gone; the image stays. */
  private void rebootBehindThePluginsBack(Path mountPoint) {
    Optional<MountEntry> m = MountTable.at(mountPoint);
    assertThat(m).isPresent();
    assertThat(Mounts.unmount(mountPoint)).isTrue();
    for (LoopDevice d : loopsUnderWork()) {
      if (m.get().source().equals(d.device().toString())) {
        LoopDevices.detach(d);
      }
    }
  }

  private List<LoopDevice> loopsUnderWork() {
    return LoopDevices.list().stream().filter(d -> d.backingFile().toString().startsWith(work.toString())).toList();
  }

  private List<Path> images() throws IOException {
    Path dir = dataDir.resolve("volumes");
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    try (Stream<Path> files = Files.list(dir)) {
      return files.filter(f -> f.getFileName().toString().endsWith(".img")).toList();
    }
  }

  private static Volume volume(String name, long minBytes) {
    return new Volume(uuid(), name, "default", minBytes, 0, "null");
  }

  private static String uuid() {
    return UUID.randomUUID().toString();
  }
}
