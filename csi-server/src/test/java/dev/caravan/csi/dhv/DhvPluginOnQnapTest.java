package dev.caravan.csi.dhv;

import static dev.caravan.csi.dhv.QnapDhvWorld.GIB;
import static dev.caravan.csi.dhv.QnapDhvWorld.volume;
import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.qnap.SimulatedAppliance;
import dev.caravan.csi.dhv.DhvEnv.Volume;
import dev.caravan.csi.dhv.QnapDhvWorld.PluginNode;
import dev.caravan.storage.iscsi.Iscsi;
import dev.caravan.storage.mount.MountEntry;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import dev.caravan.storage.multipath.Multipath;
import dev.caravan.storage.testing.GuestIscsi;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The qnap DHV plugin end to end in the guest of {@code scripts/guest-suite}: the simulated appliance
 * with real LIO targets behind it (its ACL is the target's node ACL), this guest's open-iscsi and
 * multipathd, mkfs and mounts. Each plugin node is its own host to the plugin (its own data directory,
 * records and node journal, its own volumes directory); {@link DhvPluginOnQnapSimulatorTest} covers
 * the controller half on the host.
 *
 * <p>One guest has one initiator name, and only that name can log in here. So node B attaches under
 * it, and only after node A's unpublish has logged out and flushed the map: had both logged in at
 * once under two names, the one multipathd of this guest would merge both nodes' paths to the LUN
 * into a single map, which two real hosts never share. B's publish while A holds the volume is made
 * under the initiator name a second host would have, which is what the target's ACL sees.
 */
class DhvPluginOnQnapTest {
  private static final String ELSEWHERE = "iqn.2026-01.dev.caravan.test:dhv-second-host";
  private static final String WRITER = "single-node-writer";

  @TempDir Path work;
  private QnapDhvWorld world;
  private PluginNode nodeA;
  private PluginNode nodeB;
  private final List<Runnable> cleanups = new ArrayList<>();

  @BeforeEach
  void setUp() throws IOException {
    // DhvPluginOnQnapSimulatorTest covers the controller half on the host.
    GuestIscsi.assumeAvailable();
    List<String> portals = List.of("127.0.0.1:3260", "127.0.0.2:3260");
    world = new QnapDhvWorld(work, SimulatedAppliance.start(work).withLio(work.resolve("lio"), portals), portals);
    String self = Iscsi.system().initiatorName();
    nodeA = world.node("nodeA", self);
    nodeB = world.node("nodeB", self);
  }

  /** What a failed test left: its unpublishes (the plugin's own way out), its mounts, then the targets. */
  @AfterEach
  void tearDown() {
    if (world == null) {
      return;
    }
    cleanups.reversed().forEach(c -> {
      try {
        c.run();
      } catch (RuntimeException e) {
        System.err.println("cleanup: " + e);
      }
    });
    MountTable.read().stream().filter(m -> m.mountPoint().startsWith(work))
        .sorted(Comparator.comparing((MountEntry m) -> m.mountPoint().getNameCount()).reversed())
        .forEach(m -> Mounts.unmount(m.mountPoint()));
    world.close();
  }

  @Test
  void deferredVolumeMovesFromNodeAToNodeBWithItsDataAndHasOneWriterAtATime() throws IOException {
    Volume v = volume("moving", GIB, "{\"mode\":\"0750\"}");
    assertThat(world.ok(nodeA, "deferred", DhvEnv.create(nodeA.env(), v))).containsOnlyKeys("bytes");
    String id = world.backendId(v);
    String iqn = SimulatedAppliance.targetIqn(id);
    assertThat(sessionsTo(iqn)).as("create logs in nowhere").isZero();

    cleanups.add(() -> world.run(nodeA, "deferred", DhvEnv.unpublish(nodeA.env(), v, QnapDhvWorld.uuid())));
    Map<String, Object> onA = world.ok(nodeA, "deferred", DhvEnv.publish(nodeA.env(), v, QnapDhvWorld.uuid(), WRITER,
        false));
    Path pathA = nodeA.path(v);
    assertThat(onA).containsEntry("path", pathA.toString()).containsEntry("bytes", GIB);
    assertThat(world.appliance.acl(id)).containsExactly(nodeA.initiator());
    assertThat(MountTable.at(pathA)).get().satisfies(m -> assertThat(m.fsType()).isEqualTo("ext4"));
    assertThat(sessionsTo(iqn)).as("one session per portal").isEqualTo(2);
    Files.writeString(pathA.resolve("data.txt"), "written on A");

    // Node B, as the second host it stands for, while A holds the volume: the ACL fence refuses it.
    PluginNode bElsewhere = nodeB.as(ELSEWHERE);
    QnapDhvWorld.Outcome fenced = world.run(bElsewhere, "deferred",
        DhvEnv.publish(bElsewhere.env(), v, QnapDhvWorld.uuid(), WRITER, false));
    assertThat(fenced.status()).as(fenced.toString()).isEqualTo(DhvException.HELD_ELSEWHERE);
    assertThat(fenced.stdout()).contains("initiator " + nodeA.initiator());
    assertThat(world.appliance.acl(id)).containsExactly(nodeA.initiator());
    assertThat(MountTable.isMountPoint(nodeB.path(v))).isFalse();
    QnapDhvWorld.Outcome inUse = world.run(nodeB, "deferred", DhvEnv.delete(nodeB.env(), v, ""));
    assertThat(inUse.status()).as("delete while published: %s", inUse).isEqualTo(DhvException.FAILED);
    assertThat(Files.readString(pathA.resolve("data.txt"))).isEqualTo("written on A");

    world.ok(nodeA, "deferred", DhvEnv.unpublish(nodeA.env(), v, QnapDhvWorld.uuid()));
    assertThat(MountTable.isMountPoint(pathA)).isFalse();
    assertThat(pathA).doesNotExist();
    assertThat(world.appliance.acl(id)).as("unpublish removes A from the ACL").isEmpty();
    assertThat(sessionsTo(iqn)).as("and logs out").isZero();
    String wwid = "3" + world.naa(id);
    assertThat(Multipath.system().maps()).as("and flushes the map").noneMatch(m -> m.wwid().value().equals(wwid));

    // Node B never ran create and holds no record: it finds the LUN on the appliance.
    cleanups.add(() -> world.run(nodeB, "deferred", DhvEnv.unpublish(nodeB.env(), v, QnapDhvWorld.uuid())));
    Map<String, Object> onB = world.ok(nodeB, "deferred", DhvEnv.publish(nodeB.env(), v, QnapDhvWorld.uuid(), WRITER,
        false));
    Path pathB = nodeB.path(v);
    assertThat(onB).containsEntry("path", pathB.toString());
    assertThat(Files.readString(pathB.resolve("data.txt"))).as("A's data, not a new filesystem")
        .isEqualTo("written on A");
    assertThat(world.ok(nodeB, "deferred", DhvEnv.publish(nodeB.env(), v, QnapDhvWorld.uuid(), WRITER, false)))
        .as("a repeated publish").isEqualTo(onB);
    world.ok(nodeB, "deferred", DhvEnv.unpublish(nodeB.env(), v, QnapDhvWorld.uuid()));
    assertThat(sessionsTo(iqn)).isZero();

    world.ok(nodeA, "deferred", DhvEnv.delete(nodeA.env(), v, ""));
    assertThat(world.appliance.objects()).isEmpty();
    world.ok(nodeB, "deferred", DhvEnv.delete(nodeB.env(), v, ""));
  }

  @Test
  void anUnpublishWhoseJournalIsLostKeepsTheFenceWhileTheDeviceIsMounted() throws IOException {
    Volume v = volume("unaccounted", GIB, "null");
    world.ok(nodeA, "deferred", DhvEnv.create(nodeA.env(), v));
    String id = world.backendId(v);
    cleanups.add(() -> world.run(nodeA, "deferred", DhvEnv.unpublish(nodeA.env(), v, QnapDhvWorld.uuid())));
    world.ok(nodeA, "deferred", DhvEnv.publish(nodeA.env(), v, QnapDhvWorld.uuid(), WRITER, false));
    Path pathA = nodeA.path(v);
    Files.writeString(pathA.resolve("data.txt"), "still written on A");
    // The filesystem moves to another mount point of this node, and A's node journal is lost: nothing
    // the plugin keeps says the device is in use.
    String wwid = "3" + world.naa(id);
    Path device = Multipath.system().maps().stream().filter(m -> m.wwid().value().equals(wwid)).findFirst()
        .orElseThrow().device();
    Path elsewhere = Files.createDirectories(work.resolve("elsewhere"));
    Mounts.mount(device, elsewhere, "ext4", Set.of(), null);
    assertThat(Mounts.unmount(pathA)).isTrue();
    Trees.delete(nodeA.dataDir().resolve("dhv/nodes").resolve(nodeA.id()).resolve("journal").resolve(v.id()));

    QnapDhvWorld.Outcome refused = world.run(nodeA, "deferred", DhvEnv.unpublish(nodeA.env(), v,
        QnapDhvWorld.uuid()));
    assertThat(refused.status()).as(refused.toString()).isEqualTo(DhvException.FAILED);
    assertThat(refused.stdout()).contains("mounted at " + elsewhere);
    assertThat(world.appliance.acl(id)).as("the fence stays while A may still write").containsExactly(nodeA.initiator());

    assertThat(Mounts.unmount(elsewhere)).isTrue();
    world.ok(nodeA, "deferred", DhvEnv.unpublish(nodeA.env(), v, QnapDhvWorld.uuid()));
    assertThat(world.appliance.acl(id)).as("proved unused: the fence is lifted").isEmpty();
    assertThat(sessionsTo(SimulatedAppliance.targetIqn(id))).as("the idle attachment was detached").isZero();
    assertThat(Multipath.system().maps()).noneMatch(m -> m.wwid().value().equals(wwid));
    world.ok(nodeA, "deferred", DhvEnv.delete(nodeA.env(), v, ""));
  }

  @Test
  void immediateCreateAttachesHereAndDeleteReleasesAndDestroys() throws IOException {
    Volume v = volume("here", GIB, "null");
    Path path = nodeA.path(v);
    cleanups.add(() -> world.run(nodeA, "immediate", DhvEnv.delete(nodeA.env(), v, path.toString())));
    Map<String, Object> created = world.ok(nodeA, "immediate", DhvEnv.create(nodeA.env(), v));
    assertThat(created).containsEntry("path", path.toString()).containsEntry("bytes", GIB);
    String id = world.backendId(v);
    assertThat(world.appliance.acl(id)).containsExactly(nodeA.initiator());
    Files.writeString(path.resolve("data.txt"), "kept");

    // A reboot takes the mount down; the agent-start create puts it back, data untouched.
    assertThat(Mounts.unmount(path)).isTrue();
    assertThat(world.ok(nodeA, "immediate", DhvEnv.create(nodeA.env(), v))).isEqualTo(created);
    assertThat(Files.readString(path.resolve("data.txt"))).isEqualTo("kept");

    world.ok(nodeA, "immediate", DhvEnv.delete(nodeA.env(), v, path.toString()));
    assertThat(path).doesNotExist();
    assertThat(sessionsTo(SimulatedAppliance.targetIqn(id))).isZero();
    assertThat(world.appliance.objects()).isEmpty();
  }

  private static long sessionsTo(String iqn) {
    return Iscsi.system().sessions().stream().filter(s -> s.target().equals(iqn)).count();
  }
}
