package dev.caravan.csi.dhv;

import static dev.caravan.csi.dhv.QnapDhvWorld.GIB;
import static dev.caravan.csi.dhv.QnapDhvWorld.volume;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.testing.TestClassPath;
import dev.caravan.csi.backend.Backend;
import dev.caravan.csi.backend.SnapshotInfo;
import dev.caravan.csi.backend.qnap.SimulatedAppliance;
import dev.caravan.csi.dhv.DhvEnv.Volume;
import dev.caravan.csi.dhv.NomadDhvRunner.Outcome;
import dev.caravan.csi.dhv.QnapDhvWorld.PluginNode;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.testing.HostRequirements;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The qnap DHV plugin's controller half on the host, against the simulated appliance alone: what
 * create, delete and the fence do on the appliance, with no node attaching anything (that needs an
 * iSCSI target: {@link DhvPluginOnQnapTest}, in the guest). The plugin nodes are separate hosts to
 * the plugin (each its own data directory and initiator name): a volume created on one is deleted or
 * refused on another from what the appliance holds.
 */
class DhvPluginOnQnapSimulatorTest {
  private static final String INITIATOR_A = "iqn.2026-01.dev.caravan.test:dhv-a";
  private static final String INITIATOR_B = "iqn.2026-01.dev.caravan.test:dhv-b";

  @TempDir Path work;
  private QnapDhvWorld world;
  private PluginNode nodeA;
  private PluginNode nodeB;

  @BeforeEach
  void setUp() throws IOException {
    world = new QnapDhvWorld(work, SimulatedAppliance.start(work), List.of("192.0.2.10:3260", "192.0.2.11:3260"));
    nodeA = world.node("nodeA", INITIATOR_A);
    nodeB = world.node("nodeB", INITIATOR_B);
  }

  @AfterEach
  void tearDown() {
    if (world != null) {
      world.close();
    }
  }

  @Test
  void deferredCreateMakesALunAndItsTargetAndAnyNodeDeletesThem() {
    Volume v = volume("pg data/../x", GIB, "{\"fsType\":\"xfs\",\"thin\":\"true\"}");
    Map<String, Object> created = world.ok(nodeA, "deferred", DhvEnv.create(nodeA.env(), v));
    assertThat(created).as("no node path exists yet").containsOnlyKeys("bytes").containsEntry("bytes", GIB);
    String id = world.backendId(v);
    assertThat(world.appliance.objects()).as("one LUN and its target").hasSize(2)
        .allMatch(o -> o.endsWith(id.substring("qnap/v1/".length())));
    assertThat(id).as("the volume's filesystem is the parameter's").startsWith("qnap/v1/cvx");
    assertThat(world.appliance.acl(id)).as("create binds no node").isEmpty();
    assertThat(nodeA.path(v)).as("nor makes a directory").doesNotExist();

    assertThat(world.ok(nodeA, "deferred", DhvEnv.create(nodeA.env(), v))).isEqualTo(created);
    assertThat(world.ok(nodeA, "deferred", DhvEnv.create(nodeA.env(), v.withMin(2 * GIB))))
        .as("an update grows the LUN").containsEntry("bytes", 2 * GIB);
    assertThat(world.appliance.lunBytes(id)).isEqualTo(2 * GIB);

    // Node B never ran create: it finds the volume on the appliance by the name its id gives it.
    world.ok(nodeB, "deferred", DhvEnv.delete(nodeB.env(), v, ""));
    assertThat(world.appliance.objects()).isEmpty();
    world.ok(nodeA, "deferred", DhvEnv.delete(nodeA.env(), v, ""));
    world.ok(nodeB, "deferred", DhvEnv.delete(nodeB.env(), v, ""));
  }

  @Test
  void aFailedCreateNeverDestroysALunItFound() throws IOException {
    Volume v = volume("found", GIB, "null");
    world.ok(nodeA, "deferred", DhvEnv.create(nodeA.env(), v));
    String id = world.backendId(v);
    // Node B holds no record of the volume (its data directory was lost, or restored from before the
    // create); its agent-start create finds the LUN, and the mount after it fails.
    Files.createDirectories(nodeB.env().volumesDir());
    Files.createSymbolicLink(nodeB.path(v), Files.createDirectories(work.resolve("elsewhere")));
    QnapDhvWorld.Outcome failed = world.run(nodeB, "immediate", DhvEnv.create(nodeB.env(), v));
    assertThat(failed.status()).as(failed.toString()).isEqualTo(DhvException.FAILED);
    assertThat(failed.stdout()).contains("symbolic link");
    assertThat(world.appliance.objects()).as("the LUN and its target stay: the failed create did not make them")
        .hasSize(2);
    assertThat(world.appliance.lunBytes(id)).isEqualTo(GIB);
    world.ok(nodeA, "deferred", DhvEnv.delete(nodeA.env(), v, ""));
    assertThat(world.appliance.objects()).isEmpty();
  }

  @Test
  void aFailedFirstCreateRemovesTheLunItMade() throws IOException {
    Volume v = volume("made", GIB, "null");
    Files.createDirectories(nodeA.env().volumesDir());
    Files.createSymbolicLink(nodeA.path(v), Files.createDirectories(work.resolve("elsewhere")));
    QnapDhvWorld.Outcome failed = world.run(nodeA, "immediate", DhvEnv.create(nodeA.env(), v));
    assertThat(failed.status()).as(failed.toString()).isEqualTo(DhvException.FAILED);
    assertThat(world.appliance.objects()).as("Nomad never deletes a failed create: the plugin must").isEmpty();
    assertThat(nodeA.dataDir().resolve("dhv/volumes/" + v.id() + ".properties")).doesNotExist();
  }

  @Test
  void badParametersAndSizesAreRefusedNamingTheRuleAndMakeNothing() {
    QnapDhvWorld.Outcome unknown = world.run(nodeA, "deferred",
        DhvEnv.create(nodeA.env(), volume("u", GIB, "{\"compression\":\"lz4\"}")));
    assertThat(unknown.status()).as(unknown.toString()).isEqualTo(DhvException.INVALID);
    assertThat(unknown.stdout()).contains("'compression' is not known").contains("fsType").contains("pool")
        .contains("thin").contains("mode");

    QnapDhvWorld.Outcome fs = world.run(nodeA, "deferred",
        DhvEnv.create(nodeA.env(), volume("f", GIB, "{\"fsType\":\"btrfs\"}")));
    assertThat(fs.status()).as(fs.toString()).isEqualTo(DhvException.INVALID);
    assertThat(fs.stdout()).contains("btrfs").contains("ext4 or xfs");

    QnapDhvWorld.Outcome odd = world.run(nodeA, "deferred",
        DhvEnv.create(nodeA.env(), volume("g", GIB + GIB / 2, "null")));
    assertThat(odd.status()).as(odd.toString()).isEqualTo(DhvException.INVALID);
    assertThat(odd.stdout()).contains("whole number of GiB");

    QnapDhvWorld.Outcome chap = world.run(nodeA, "deferred", DhvEnv.create(nodeA.env(), volume("c", GIB, "null")),
        Map.of("chap-user-secret", "u", "chap-password-secret", "p"));
    assertThat(chap.status()).as(chap.toString()).isEqualTo(DhvException.INVALID);
    assertThat(chap.stdout()).contains("chap-password-secret").contains("no secrets");

    assertThat(world.appliance.objects()).as("a refused create makes nothing").isEmpty();
  }

  @Test
  void deleteIsRefusedWhileTheLunHasSnapshotsOrANodeHoldsIt() {
    Volume v = volume("kept", GIB, "null");
    world.ok(nodeA, "deferred", DhvEnv.create(nodeA.env(), v));
    String id = world.backendId(v);
    try (Backend operator = world.backend()) {
      SnapshotInfo snap = operator.controller().createSnapshot(id, "operator-snap", Map.of());
      QnapDhvWorld.Outcome held = world.run(nodeB, "deferred", DhvEnv.delete(nodeB.env(), v, ""));
      assertThat(held.status()).as(held.toString()).isEqualTo(DhvException.FAILED);
      assertThat(held.stdout()).contains("snapshots").contains(snap.id());
      assertThat(world.appliance.objects()).as("nothing deleted").hasSize(3);
      operator.controller().deleteSnapshot(snap.id());

      // Node A holds it (as its publish leaves the ACL): B's publish is refused before B touches anything.
      operator.controller().publishVolume(id, INITIATOR_A, Map.of());
      QnapDhvWorld.Outcome fenced = world.run(nodeB, "deferred",
          DhvEnv.publish(nodeB.env(), v, QnapDhvWorld.uuid(), "single-node-writer", false));
      assertThat(fenced.status()).as(fenced.toString()).isEqualTo(DhvException.HELD_ELSEWHERE);
      assertThat(fenced.stdout()).contains("initiator " + INITIATOR_A).contains("single writer");
      assertThat(world.appliance.acl(id)).containsExactly(INITIATOR_A);
      assertThat(nodeB.path(v)).doesNotExist();
      assertThat(nodeB.dataDir().resolve("dhv/volumes/" + v.id() + ".properties"))
          .as("a refused publish leaves no claim").doesNotExist();

      QnapDhvWorld.Outcome inUse = world.run(nodeB, "deferred", DhvEnv.delete(nodeB.env(), v, ""));
      assertThat(inUse.status()).as(inUse.toString()).isEqualTo(DhvException.FAILED);
      assertThat(inUse.stdout()).contains("published on the node with initiator " + INITIATOR_A)
          .contains("unpublish it there first");
      // B's unpublish removes only B's identity: A keeps the volume.
      world.ok(nodeB, "deferred", DhvEnv.unpublish(nodeB.env(), v, QnapDhvWorld.uuid()));
      assertThat(world.appliance.acl(id)).containsExactly(INITIATOR_A);
      operator.controller().unpublishVolume(id, Optional.of(INITIATOR_A));
    }
    world.ok(nodeB, "deferred", DhvEnv.delete(nodeB.env(), v, ""));
    assertThat(world.appliance.objects()).isEmpty();
  }

  @Test
  void anUnpublishWithoutAJournalRecordKeepsTheFenceWhileSomethingIsMountedAtTheVolumesPath() throws IOException {
    HostRequirements.assumeRoot();
    Volume v = volume("still-mounted", GIB, "null");
    world.ok(nodeA, "deferred", DhvEnv.create(nodeA.env(), v));
    String id = world.backendId(v);
    try (Backend operator = world.backend()) {
      operator.controller().publishVolume(id, INITIATOR_A, Map.of()); // as A's publish left the ACL
    }
    // A's filesystem is still mounted, but A's node journal has no record of it (lost with its data
    // directory): nothing tells the plugin what is mounted there.
    Path path = Files.createDirectories(nodeA.path(v));
    Mounts.mount(Path.of("tmpfs"), path, "tmpfs", Set.of(), "size=1m");
    try {
      QnapDhvWorld.Outcome refused = world.run(nodeA, "deferred", DhvEnv.unpublish(nodeA.env(), v, QnapDhvWorld.uuid()));
      assertThat(refused.status()).as(refused.toString()).isEqualTo(DhvException.FAILED);
      assertThat(refused.stdout()).contains(path.toString()).contains("mounted");
      assertThat(world.appliance.acl(id)).as("the fence stays while A may still write").containsExactly(INITIATOR_A);
      QnapDhvWorld.Outcome second = world.run(nodeB, "deferred",
          DhvEnv.publish(nodeB.env(), v, QnapDhvWorld.uuid(), "single-node-writer", false));
      assertThat(second.status()).as(second.toString()).isEqualTo(DhvException.HELD_ELSEWHERE);
    } finally {
      Mounts.unmount(path);
    }
    world.ok(nodeA, "deferred", DhvEnv.unpublish(nodeA.env(), v, QnapDhvWorld.uuid()));
    assertThat(world.appliance.acl(id)).as("proved unused: the fence is lifted").isEmpty();
    world.ok(nodeA, "deferred", DhvEnv.delete(nodeA.env(), v, ""));
  }

  @Test
  void anOperatorReleasesALostNodesHoldOnlyByNamingThatNode() {
    Volume v = volume("lost", GIB, "null");
    world.ok(nodeA, "deferred", DhvEnv.create(nodeA.env(), v));
    String id = world.backendId(v);
    try (Backend operator = world.backend()) {
      operator.controller().publishVolume(id, INITIATOR_A, Map.of()); // node A took it, then was lost
    }
    QnapDhvWorld.Outcome wrong = world.run(nodeB, "deferred",
        DhvEnv.release(nodeB.env(), v, "iqn.2026-01.dev.caravan.test:someone-else"));
    assertThat(wrong.status()).as(wrong.toString()).isEqualTo(DhvException.FAILED);
    assertThat(wrong.stdout()).contains("held by the node with initiator " + INITIATOR_A)
        .contains("nothing was released");
    QnapDhvWorld.Outcome self = world.run(nodeB, "deferred", DhvEnv.release(nodeB.env(), v, INITIATOR_B));
    assertThat(self.status()).as(self.toString()).isEqualTo(DhvException.INVALID);
    assertThat(self.stdout()).contains("this node's own initiator").contains("unpublish");
    QnapDhvWorld.Outcome unnamed = world.run(nodeB, "deferred", DhvEnv.release(nodeB.env(), v, ""));
    assertThat(unnamed.status()).as(unnamed.toString()).isEqualTo(DhvException.INVALID);
    assertThat(unnamed.stdout()).contains("DHV_RELEASE_INITIATOR");
    QnapDhvWorld.Outcome immediate = world.run(nodeB, "immediate", DhvEnv.release(nodeB.env(), v, INITIATOR_A));
    assertThat(immediate.status()).as(immediate.toString()).isEqualTo(DhvException.INVALID);
    assertThat(world.appliance.acl(id)).as("no refused release changed the ACL").containsExactly(INITIATOR_A);
    QnapDhvWorld.Outcome held = world.run(nodeB, "deferred", DhvEnv.delete(nodeB.env(), v, ""));
    assertThat(held.status()).as("held: " + held).isEqualTo(DhvException.FAILED);

    assertThat(world.ok(nodeB, "deferred", DhvEnv.release(nodeB.env(), v, INITIATOR_A)))
        .isEqualTo(Map.of("released", INITIATOR_A));
    assertThat(world.appliance.acl(id)).as("A's initiator is out of the ACL: A can no longer log in").isEmpty();
    assertThat(world.ok(nodeB, "deferred", DhvEnv.release(nodeB.env(), v, INITIATOR_A))).as("again").isEmpty();
    world.ok(nodeB, "deferred", DhvEnv.delete(nodeB.env(), v, ""));
    assertThat(world.appliance.objects()).isEmpty();
    assertThat(world.ok(nodeB, "deferred", DhvEnv.release(nodeB.env(), v, INITIATOR_A))).as("deleted").isEmpty();
  }

  // ---- the installed executable and the appliance's credentials ---------------------------------

  @Test
  void theInstalledQnapPluginNamesOnlyTheCredentialsFileAndNeverPrintsThePassword() throws IOException {
    Path creds = Path.of(world.options.get("credentials-file"));
    Path java = Path.of(System.getProperty("java.home"), "bin", "java");
    Path pluginDir = work.resolve("plugins");
    Files.setPosixFilePermissions(creds, PosixFilePermissions.fromString("rw-r--r--"));
    assertThatThrownBy(() -> new DhvInstaller(java, TestClassPath.of(), nodeA.dataDir(), world.options)
        .install(pluginDir, "qnap")).hasMessageContaining("chmod 600");
    Map<String, String> noFile = new HashMap<>(world.options);
    noFile.remove("credentials-file");
    assertThatThrownBy(() -> new DhvInstaller(java, TestClassPath.of(), nodeA.dataDir(), noFile)
        .install(pluginDir, "qnap")).hasMessageContaining("credentials-file").hasMessageContaining("empty environment");
    Map<String, String> inline = new HashMap<>(world.options);
    inline.put("password", "x");
    Files.setPosixFilePermissions(creds, PosixFilePermissions.fromString("rw-------"));
    assertThatThrownBy(() -> new DhvInstaller(java, TestClassPath.of(), nodeA.dataDir(), inline)
        .install(pluginDir, "qnap")).hasMessageContaining("[password]");

    List<Path> written = new DhvInstaller(java, TestClassPath.of(), nodeA.dataDir(), world.options)
        .install(pluginDir, "qnap");
    assertThat(written).extracting(p -> p.getFileName().toString())
        .containsExactly("caravan-qnap", "caravan-qnap-deferred");
    String password = world.password();
    for (Path p : written) {
      assertThat(Files.readString(p)).contains("'credentials-file=" + creds + "'").doesNotContain(password);
    }

    // As Nomad runs it: a wiped environment, a JVM; the node identity comes from this host, but create
    // and delete of a deferred volume never need it.
    Volume v = volume("wrapped", GIB, "null");
    Outcome created = NomadDhvRunner.run(pluginDir.resolve("caravan-qnap-deferred"), "create",
        DhvEnv.create(nodeA.env(), v), NomadDhvRunner.OP_DEADLINE);
    assertThat(created.exitStatus()).as(created.toString()).isZero();
    assertThat(created.json()).containsEntry("bytes", GIB);
    Outcome deleted = NomadDhvRunner.run(pluginDir.resolve("caravan-qnap-deferred"), "delete",
        DhvEnv.delete(nodeA.env(), v, ""), NomadDhvRunner.OP_DEADLINE);
    assertThat(deleted.exitStatus()).as(deleted.toString()).isZero();
    assertThat(world.appliance.objects()).isEmpty();
    for (Outcome o : List.of(created, deleted)) {
      assertThat(o.stdout() + o.stderr()).as("the plugin's output").doesNotContain(password)
          .doesNotContain(password.replace("ü", "\\u00fc"));
    }
    assertThat(created.stderr()).as("it logs, to stderr").contains("create volume " + v.id());
  }
}
