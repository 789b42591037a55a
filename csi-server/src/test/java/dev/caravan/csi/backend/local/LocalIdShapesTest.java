package dev.caravan.csi.backend.local;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.IdShape;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.backend.local.LocalIds.SnapshotId;
import dev.caravan.csi.backend.local.LocalIds.VolumeId;
import dev.caravan.storage.zfs.Pbkdf2Iters;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * How the local backend reads ids before any lookup (no ZFS here: the controller has none): its own
 * form yields the lock key of the CO name the id came from, whatever the pool; everything else is an
 * id it never issues, with the rule it breaks.
 */
class LocalIdShapesTest {
  private static final LocalController CONTROLLER = new LocalController(
      null, LocalConfig.parse(Map.of("pools", "tank")), "n1", NodeUsage.none(), Pbkdf2Iters.DEFAULT);

  @Test
  void issuedIdsShareTheLockKeyOfTheirName() {
    for (String name : List.of("mysql-data", "x".repeat(128), "ümlaut ☃", "pvc-0f3a9c7e-1b2d")) {
      String key = CONTROLLER.volumeLockKey(name);
      // a long prefix shortens the slug of the leaf, never its hash: the key stays the same
      for (VolumeId v : List.of(LocalIds.volumeFor("n1", "tank", "caravan", name),
          LocalIds.volumeFor("node-with-a-fairly-long-name.example.internal", "p".repeat(30), "k8s/caravan", name))) {
        assertThat(CONTROLLER.volumeId(v.id())).as(v.id()).isEqualTo(new IdShape.Ours(key));
        SnapshotId s = new SnapshotId(v, LocalIds.snapshotNameFor(v, name));
        assertThat(CONTROLLER.snapshotId(s.id())).as(s.id()).isEqualTo(new IdShape.Ours(CONTROLLER.snapshotLockKey(name)));
      }
    }
    assertThat(CONTROLLER.volumeLockKey("a")).isNotEqualTo(CONTROLLER.volumeLockKey("b"));
    // another node's id is of this backend's form (refused later, naming the owner)
    assertThat(CONTROLLER.volumeId(LocalIds.volumeFor("n2", "tank", "caravan", "v").id())).isInstanceOf(IdShape.Ours.class);
  }

  @Test
  void aReplicasSnapshotIdNamesTheNodeHoldingItAndOnlyReplicationSnapshotsOfIt() {
    String replica = "local/v1/n2/tank/caravan/rep-0123456789ab";
    SnapshotId s = LocalIds.parseSnapshot("snapshot_id", replica + "@repl-1733360000000");
    assertThat(LocalIds.isReplica(s)).isTrue();
    assertThat(s.volume().node()).isEqualTo("n2");
    assertThat(s.snapshot()).isEqualTo("tank/caravan/rep-0123456789ab@repl-1733360000000");
    assertThat(CONTROLLER.snapshotOwner(s.id())).contains("n2");
    // never a volume, and never a CSI snapshot's name on a replica, nor a replication snapshot on a volume
    assertThat(CONTROLLER.volumeId(replica)).isInstanceOf(IdShape.NotOurs.class);
    assertThat(CONTROLLER.snapshotId(replica + "@snap-x")).isInstanceOf(IdShape.NotOurs.class);
    assertThat(CONTROLLER.snapshotId(LocalIds.volumeFor("n1", "tank", "caravan", "v").id() + "@repl-1"))
        .isInstanceOf(IdShape.NotOurs.class);
    assertThat(CONTROLLER.snapshotId("local/v1/n2/tank/caravan/rep-XYZ@repl-1")).isInstanceOf(IdShape.NotOurs.class);
  }

  @Test
  void everyOtherIdIsNeverIssuedAndSaysWhy() {
    String good = LocalIds.volumeFor("n1", "tank", "caravan", "v").id();
    Map<String, String> volumes = Map.ofEntries(
        Map.entry("vol-abc", "start with local/v1/"),
        Map.entry("../etc/passwd", "start with local/v1/"),
        Map.entry("file/v1/n1/tank/caravan/vol-a", "start with local/v1/"),
        Map.entry("local/v2/n1/tank/caravan/vol-a", "start with local/v1/"),
        Map.entry("local/v1/n1/tank/vol-a", "expected local/v1/<node>/<pool>/<parent dataset>/vol-<name>"),
        Map.entry("local/v1/n1/tank/caravan/../vol-a", "dataset component '..'"),
        Map.entry("local/v1/n1/tank/./caravan/vol-a", "dataset component '.'"),
        Map.entry("local/v1/n1/tank//caravan/vol-a", "dataset component ''"),
        Map.entry("local/v1/../tank/caravan/vol-a", "the node '..'"),
        Map.entry("local/v1/n1/../caravan/vol-a", "the pool '..'"),
        Map.entry("local/v1/n1/tank/caravan/vol-A", "the volume name 'vol-A'"),
        Map.entry("local/v1/n1/tank/caravan/vol-a/", "the volume name ''"),
        Map.entry("local/v1/n1/tank/caravan/vol-a#bookmark", "the volume name"),
        Map.entry("local/v1/n1/tank/caravan/vol-a\n", "the volume name 'vol-a\\u000a'"),
        Map.entry(good + "@snap-x", "a volume id has no '@'"));
    volumes.forEach((id, rule) -> assertThat(CONTROLLER.volumeId(id)).as(id)
        .isInstanceOfSatisfying(IdShape.NotOurs.class, n -> assertThat(n.rule()).contains(rule)));
    Map<String, String> snapshots = Map.of(
        good, "a snapshot id is <volume id>@snap-<name>",
        good + "@snap-a@snap-b", "a snapshot id is <volume id>@snap-<name>",
        good + "@clone-abc", "must be snap-",
        good + "@../x", "must be snap-",
        "snap-abc", "start with local/v1/",
        "local/v1/n1/tank/caravan/../vol-a@snap-a", "dataset component '..'");
    snapshots.forEach((id, rule) -> assertThat(CONTROLLER.snapshotId(id)).as(id)
        .isInstanceOfSatisfying(IdShape.NotOurs.class, n -> assertThat(n.rule()).contains(rule)));
  }
}
