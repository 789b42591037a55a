package dev.caravan.csi.backend.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.backend.CapacityRange;
import dev.caravan.csi.backend.ContentSource;
import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.CsiException.Kind;
import dev.caravan.csi.backend.NodeUsage;
import dev.caravan.csi.backend.Readiness;
import dev.caravan.csi.backend.VolumeRequest;
import dev.caravan.csi.backend.local.LocalBackend.PoolState;
import dev.caravan.csi.backend.local.LocalIds.SnapshotId;
import dev.caravan.csi.backend.local.LocalIds.VolumeId;
import dev.caravan.storage.zfs.Compression;
import dev.caravan.storage.zfs.PoolHealth;
import dev.caravan.storage.zfs.Pbkdf2Iters;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;

/**
 * The local backend's rules that need no ZFS: options, parameters, ids, ownership and scope
 * refusals (which must happen before ZFS is touched: the controller here has no ZFS at all), and the
 * readiness mapping.
 */
class LocalRulesTest {
  private static final LocalConfig CONFIG = LocalConfig.parse(Map.of("pools", "tank, fast", "default-pool", "fast"));

  private static CsiException csi(ThrowingCallable call) {
    try {
      call.call();
    } catch (CsiException e) {
      return e;
    } catch (Throwable t) {
      throw new AssertionError("expected a CsiException, got " + t, t);
    }
    throw new AssertionError("expected a CsiException, the call succeeded");
  }

  // ---- options ---------------------------------------------------------------------------------

  @Test
  void optionsHaveSafeDefaultsAndStrictChecks() {
    LocalConfig c = LocalConfig.parse(Map.of("pools", "tank"));
    assertThat(c.pools()).containsExactly("tank");
    assertThat(c.defaultPool()).isEqualTo("tank");
    assertThat(c.parentDataset()).isEqualTo("caravan");
    assertThat(c.reserveBytes()).isZero();
    assertThat(c.freezeOnSnapshot()).isTrue();
    assertThat(CONFIG.pools()).containsExactly("tank", "fast");
    assertThat(CONFIG.defaultPool()).isEqualTo("fast");
    assertThat(LocalConfig.parse(Map.of("default-pool", "tank")).pools()).containsExactly("tank");
    assertThat(LocalConfig.parse(Map.of("pools", "tank", "reserve", "10G")).reserveBytes()).isEqualTo(10L << 30);
    assertThat(LocalConfig.parse(Map.of("pools", "tank", "reserve", "512MiB")).reserveBytes()).isEqualTo(512L << 20);
    assertThat(LocalConfig.parse(Map.of("pools", "tank", "parent-dataset", "k8s/caravan")).parentIn("tank"))
        .isEqualTo("tank/k8s/caravan");

    assertThatThrownBy(() -> LocalConfig.parse(Map.of()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("local.pools");
    assertThatThrownBy(() -> LocalConfig.parse(Map.of("pools", "tank", "pool", "x")))
        .hasMessageContaining("unknown local backend option(s) [local.pool]").hasMessageContaining("local.pools");
    assertThatThrownBy(() -> LocalConfig.parse(Map.of("pools", "tank", "default-pool", "other")))
        .hasMessageContaining("local.default-pool 'other' is not in local.pools [tank]");
    assertThatThrownBy(() -> LocalConfig.parse(Map.of("pools", "tank,tank")))
        .hasMessageContaining("twice");
    for (String bad : List.of("", "ta nk", "1tank", "tank/x", "tank@s", "../tank")) {
      assertThatThrownBy(() -> LocalConfig.parse(Map.of("pools", "ok," + bad)))
          .as(bad).hasMessageContaining("local.pools").hasMessageContaining("is not a pool name");
    }
    for (String bad : List.of("", "/caravan", "caravan/", "a//b", "..", "a/../b", ".hidden", "a@b", "a#b",
        "a%b", "a b", "x\ny")) {
      assertThatThrownBy(() -> LocalConfig.parse(Map.of("pools", "tank", "parent-dataset", bad)))
          .as(bad).hasMessageContaining("local.parent-dataset");
    }
    assertThatThrownBy(() -> LocalConfig.parse(Map.of("pools", "tank", "reserve", "-1")))
        .hasMessageContaining("local.reserve '-1' is not a size");
    assertThatThrownBy(() -> LocalConfig.parse(Map.of("pools", "tank", "freeze-on-snapshot", "yes")))
        .hasMessageContaining("local.freeze-on-snapshot 'yes' must be true or false");
    assertThatThrownBy(() -> LocalConfig.parse(Map.of("pools", "tank", "device-wait-seconds", "0")))
        .hasMessageContaining("local.device-wait-seconds");
  }

  // ---- parameters ------------------------------------------------------------------------------

  @Test
  void parametersAreParsedWithDefaults() {
    LocalParameters p = LocalParameters.parse(Map.of(), CONFIG);
    assertThat(p.pool()).isEmpty();
    assertThat(p.host()).isEqualTo("auto");
    assertThat(p.fsType()).isEmpty();
    assertThat(p.blockSizeOrDefault()).isEqualTo(16 * 1024);
    assertThat(p.sparse()).isFalse();
    assertThat(p.compression()).isEmpty();

    LocalParameters q = LocalParameters.parse(Map.of("pool", "tank", "host", "n2", "fsType", "xfs",
        "volblocksize", "64K", "sparse", "true", "compression", "zstd"), CONFIG);
    assertThat(q.pool()).contains("tank");
    assertThat(q.host()).isEqualTo("n2");
    assertThat(q.fsType()).contains("xfs");
    assertThat(q.volblocksize()).hasValue(64 * 1024);
    assertThat(q.sparse()).isTrue();
    assertThat(q.compression()).contains(Compression.ZSTD);
    assertThat(q.encrypted()).isFalse();
    assertThat(LocalParameters.parse(Map.of("encryption", "on"), CONFIG).encrypted()).isTrue();
    assertThat(LocalParameters.parse(Map.of("encryption", "off"), CONFIG).encrypted()).isFalse();
    Map<String, Long> blocks = Map.of("4K", 4096L, "8k", 8192L, "16KiB", 16384L, "32768", 32768L, "128K", 131072L);
    blocks.forEach((text, bytes) -> assertThat(LocalParameters.blockSize(text)).as(text).isEqualTo(bytes));
    assertThat(LocalParameters.KNOWN)
        .containsExactlyInAnyOrder("pool", "host", "fsType", "volblocksize", "sparse", "compression", "encryption",
            "replicas", "replicationInterval", "replicaNodes");
  }

  @Test
  void everyParameterErrorNamesTheFieldAndTheRule() {
    record Case(String key, String value, String rule) {}
    List<Case> cases = List.of(
        new Case("pool", "other", "is not an allowed pool on this node; allowed: [tank, fast]"),
        new Case("pool", "tank/../x", "is not an allowed pool"),
        new Case("host", "a/b", "must be 'auto' or a node id"),
        new Case("host", "", "must be 'auto' or a node id"),
        new Case("fsType", "btrfs", "is not supported; supported: ext4, xfs"),
        new Case("volblocksize", "3K", "must be a power of two from 4K to 128K"),
        new Case("volblocksize", "2K", "must be a power of two from 4K to 128K"),
        new Case("volblocksize", "256K", "must be a power of two from 4K to 128K"),
        new Case("volblocksize", "12K", "must be a power of two from 4K to 128K"),
        new Case("volblocksize", "16M", "must be a power of two from 4K to 128K"),
        new Case("volblocksize", "", "must be a power of two from 4K to 128K"),
        new Case("sparse", "yes", "must be true or false"),
        new Case("compression", "brotli", "is not supported; supported: on, off, lzjb, gzip, zle, lz4, zstd"));
    for (Case c : cases) {
      CsiException e = csi(() -> LocalParameters.parse(Map.of(c.key(), c.value()), CONFIG));
      assertThat(e.kind()).as(c.toString()).isEqualTo(Kind.INVALID_ARGUMENT);
      assertThat(e.getMessage()).as(c.toString()).startsWith("parameters." + c.key() + " '").contains(c.rule());
    }
    assertThat(csi(() -> LocalParameters.freeze(Map.of("freeze", "maybe"), true)).getMessage())
        .isEqualTo("parameters.freeze 'maybe' must be true or false");
    assertThat(LocalParameters.freeze(Map.of(), true)).isTrue();
    assertThat(LocalParameters.freeze(Map.of("freeze", "false"), true)).isFalse();
  }

  // ---- ids -------------------------------------------------------------------------------------

  @Test
  void idsRoundTripAndStayWithin128Bytes() {
    VolumeId v = LocalIds.volumeFor("n1", "tank", "caravan", "mysql-data");
    assertThat(v.id()).matches("local/v1/n1/tank/caravan/vol-mysql-data-[0-9a-f]{12}");
    assertThat(v.dataset()).startsWith("tank/caravan/vol-mysql-data-");
    assertThat(LocalIds.parseVolume("volume_id", v.id())).isEqualTo(v);
    assertThat(LocalIds.volumeFor("n1", "tank", "caravan", "mysql-data")).isEqualTo(v);
    assertThat(LocalIds.volumeFor("n1", "tank", "caravan", "mysql-data2").leaf()).isNotEqualTo(v.leaf());

    SnapshotId s = new SnapshotId(v, LocalIds.snapshotNameFor(v, "nightly 2024-01-01"));
    assertThat(s.id()).matches("local/v1/n1/tank/caravan/vol-mysql-data-[0-9a-f]{12}@snap-nightly-2024-01-01-[0-9a-f]{12}");
    assertThat(LocalIds.parseSnapshot("snapshot_id", s.id())).isEqualTo(s);
    assertThat(s.snapshot()).isEqualTo(v.dataset() + "@" + s.name());

    String longName = "x".repeat(128);
    String node = "node-with-a-fairly-long-name.example.internal";
    VolumeId lv = LocalIds.volumeFor(node, "tank", "k8s/caravan", longName);
    assertThat(lv.id().getBytes(StandardCharsets.UTF_8).length).isLessThanOrEqualTo(LocalIds.VOLUME_ID_MAX);
    SnapshotId ls = new SnapshotId(lv, LocalIds.snapshotNameFor(lv, longName));
    assertThat(ls.id().getBytes(StandardCharsets.UTF_8).length).isLessThanOrEqualTo(128);
    assertThat(LocalIds.parseSnapshot("snapshot_id", ls.id())).isEqualTo(ls);
    // a name without letters or digits still yields a valid id (hash only)
    VolumeId odd = LocalIds.volumeFor("n1", "tank", "caravan", "ümlaut ☃");
    assertThat(LocalIds.parseVolume("volume_id", odd.id())).isEqualTo(odd);
    assertThatThrownBy(() -> LocalIds.requireRoom("n".repeat(60), "p".repeat(40), "caravan"))
        .hasMessageContaining("too long");
  }

  @Test
  void maliciousOrForeignIdsAreRejectedNamingTheField() {
    String good = LocalIds.volumeFor("n1", "tank", "caravan", "v").id();
    List<String> badVolumes = List.of(
        "",
        "vol-abc",
        "file/v1/n1/tank/caravan/vol-a",
        "local/v2/n1/tank/caravan/vol-a",
        "local/v1/n1/tank/vol-a",
        "local/v1/n1/tank/caravan/../vol-a",
        "local/v1/n1/tank/../../etc/vol-a",
        "local/v1/n1/tank/./caravan/vol-a",
        "local/v1/n1/tank//caravan/vol-a",
        "local/v1/n1/tank/caravan/vol-a/",
        "local/v1/../tank/caravan/vol-a",
        "local/v1/n1/../caravan/vol-a",
        "local/v1/n1/tank/caravan/vol-A",
        "local/v1/n1/tank/caravan/vol-a@snap-b",
        "local/v1/n1/tank/caravan/vol-a#bookmark",
        "local/v1/n1/tank/caravan/vol-a%recv",
        "local/v1/n1/tank/car van/vol-a",
        "local/v1/n1/tank/caravan/vol-a\u0000",
        "local/v1/n1/tank/caravan/vol-a\n",
        "local/v1/n1/tank/caravan/other",
        "local/v1/n1/tank/caravan/vol-",
        "local/v1/n1/tank/caravan/vol--a",
        good + "x".repeat(128));
    for (String id : badVolumes) {
      CsiException e = csi(() -> LocalIds.parseVolume("volume_id", id));
      assertThat(e.kind()).as(id).isEqualTo(Kind.INVALID_ARGUMENT);
      assertThat(e.getMessage()).as(id).startsWith("volume_id ");
    }
    List<String> badSnapshots = List.of(
        good,
        good + "@",
        good + "@snap-a@snap-b",
        good + "@../x",
        good + "@clone-abc",
        good + "@snap-a/b",
        good + "@snap-A",
        "local/v1/n1/tank/caravan/../vol-a@snap-a");
    for (String id : badSnapshots) {
      CsiException e = csi(() -> LocalIds.parseSnapshot("snapshot_id", id));
      assertThat(e.kind()).as(id).isEqualTo(Kind.INVALID_ARGUMENT);
      assertThat(e.getMessage()).as(id).startsWith("snapshot_id ");
    }
  }

  // ---- ownership and scope, decided before ZFS is touched -------------------------------------

  @Test
  void callsForAnotherNodesVolumeAreUnavailableNamingTheOwner() {
    LocalController c = new LocalController(null, CONFIG, "n1", NodeUsage.none(), Pbkdf2Iters.DEFAULT); // no ZFS: any ZFS call would fail
    String foreign = LocalIds.volumeFor("n2", "tank", "caravan", "data").id();
    String foreignSnap = foreign + "@snap-x-0123456789ab";
    List<ThrowingCallable> calls = List.of(
        () -> c.deleteVolume(foreign),
        () -> c.findVolume(foreign),
        () -> c.volumeStatus(foreign),
        () -> c.expandVolume(foreign, new CapacityRange(1 << 30, 0), AccessType.MOUNT),
        () -> c.createSnapshot(foreign, "s", Map.of()),
        () -> c.deleteSnapshot(foreignSnap),
        () -> c.findSnapshot(foreignSnap),
        () -> c.createVolume(request(Map.of("host", "n2"), Optional.empty())),
        () -> c.createVolume(request(Map.of(), Optional.of(ContentSource.volume(foreign)))),
        () -> c.createVolume(request(Map.of(), Optional.of(ContentSource.snapshot(foreignSnap)))),
        () -> c.capacity(Map.of("host", "n2")));
    for (ThrowingCallable call : calls) {
      CsiException e = csi(call);
      assertThat(e.kind()).isEqualTo(Kind.UNAVAILABLE);
      assertThat(e.getMessage()).contains("node n2").contains("n1");
    }
    // A CreateVolume whose requisite names only other nodes first asks ZFS whether the name exists
    // here (a repeat is ALREADY_EXISTS): ControllerRulesConformance#aRepeatThatExcludesTheVolumesNodeIsAlreadyExists
    // proves both answers on real ZFS in the guest.
  }

  @Test
  void ownIdsOutsideTheManagedDatasetsAreRefusedWithoutTouchingZfs() {
    LocalController c = new LocalController(null, CONFIG, "n1", NodeUsage.none(), Pbkdf2Iters.DEFAULT);
    for (String id : List.of(LocalIds.volumeFor("n1", "rpool", "caravan", "data").id(),
        LocalIds.volumeFor("n1", "tank", "other", "data").id(),
        LocalIds.volumeFor("n1", "tank", "caravan/deeper", "data").id())) {
      assertThat(csi(() -> c.deleteVolume(id)).kind()).isEqualTo(Kind.FAILED_PRECONDITION);
      assertThat(csi(() -> c.expandVolume(id, new CapacityRange(1 << 30, 0), null)).getMessage())
          .contains("outside this node's managed datasets");
      assertThat(csi(() -> c.createSnapshot(id, "s", Map.of())).kind()).isEqualTo(Kind.FAILED_PRECONDITION);
      assertThat(c.findVolume(id)).isEmpty();
    }
  }

  private static VolumeRequest request(Map<String, String> params, Optional<ContentSource> source) {
    return new VolumeRequest("v", CapacityRange.UNSPECIFIED, Set.of(AccessType.MOUNT), Optional.of("ext4"), params,
        source, List.of(), List.of());
  }

  // ---- readiness ---------------------------------------------------------------------------------

  @Test
  void startNeedsAnOnlinePoolAndProbeFollowsPoolHealth() {
    Map<String, PoolState> none = states(null, null);
    assertThat(LocalBackend.startRefusal(CONFIG, none)).hasValueSatisfying(m -> assertThat(m)
        .contains("no allowlisted ZFS pool is imported and ONLINE").contains("tank=not imported")
        .contains("fast=not imported"));
    assertThat(LocalBackend.startRefusal(CONFIG, states(PoolHealth.DEGRADED, PoolHealth.FAULTED))).isPresent();
    assertThat(LocalBackend.startRefusal(CONFIG, states(PoolHealth.FAULTED, PoolHealth.ONLINE))).isEmpty();

    Readiness ok = LocalBackend.readiness(CONFIG, states(PoolHealth.ONLINE, null));
    assertThat(ok.ready()).isTrue();
    assertThat(ok.detail()).contains("tank=ONLINE").contains("fast=not imported");
    assertThat(LocalBackend.readiness(CONFIG, states(PoolHealth.DEGRADED, null)).ready()).isTrue();
    for (PoolHealth bad : List.of(PoolHealth.FAULTED, PoolHealth.SUSPENDED, PoolHealth.UNAVAIL, PoolHealth.OFFLINE,
        PoolHealth.REMOVED, PoolHealth.UNKNOWN)) {
      Readiness r = LocalBackend.readiness(CONFIG, states(bad, null));
      assertThat(r.ready()).as(bad.name()).isFalse();
      assertThat(r.detail()).contains("no usable allowlisted pool").contains("tank=" + bad.name());
    }
  }

  private static Map<String, PoolState> states(PoolHealth tank, PoolHealth fast) {
    Map<String, PoolState> m = new LinkedHashMap<>();
    m.put("tank", new PoolState(tank, tank == null ? "not imported" : ""));
    m.put("fast", new PoolState(fast, fast == null ? "not imported" : ""));
    return m;
  }
}
