package dev.caravan.storage.zfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.internal.zfs.ZfsCommand;
import dev.caravan.storage.internal.zfs.ZfsIoctls;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** The facade's values and their parsing, without ZFS. */
class ValuesTest {
  private static final int ZVOL = 3;
  private static final int FILESYSTEM = 2;

  @Test
  void zvolSpecReadsLikeProseAndChecksItself() {
    ZvolSpec spec =
        ZvolSpec.of("tank/caravan/vol-1", 1L << 30)
            .blockSize(8192)
            .compression(Compression.LZ4)
            .userProperty("caravan:source", "tank/caravan/vol-0@s1");
    assertThat(spec.name()).isEqualTo("tank/caravan/vol-1");
    assertThat(spec.blockSize()).isEqualTo(OptionalLong.of(8192));
    assertThat(spec.sparse()).isFalse();
    assertThat(spec.sparse(true).sparse()).isTrue();
    assertThat(spec.compression()).contains(Compression.LZ4);
    assertThat(spec.userProperties()).containsExactly(Map.entry("caravan:source", "tank/caravan/vol-0@s1"));
    assertThat(ZvolSpec.of("tank/v", 16384).effectiveBlockSize()).isEqualTo(16384);

    assertThatThrownBy(() -> ZvolSpec.of("tank", 1L << 30))
        .hasMessageContaining("below its pool");
    assertThatThrownBy(() -> ZvolSpec.of("tank/v@s", 1L << 30))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ZvolSpec.of("tank/v", 0)).hasMessageContaining("positive");
    assertThatThrownBy(() -> ZvolSpec.of("tank/v", 10_000))
        .hasMessageContaining("not a multiple of the block size 16384");
    assertThatThrownBy(() -> ZvolSpec.of("tank/v", 1L << 30).blockSize(3000))
        .hasMessageContaining("power of two");
    assertThatThrownBy(() -> ZvolSpec.of("tank/v", 1L << 30).userProperty("Owner", "x"))
        .hasMessageContaining("not a ZFS user property name");
    assertThatThrownBy(() -> ZvolSpec.of("tank/v", 1L << 30).userProperty("volsize", "1"))
        .hasMessageContaining("not a ZFS user property name");
  }

  @Test
  void namesAreCheckedBeforeReachingTheKernel() {
    assertThat(DatasetNames.pool("tank/a/b@s")).isEqualTo("tank");
    assertThat(DatasetNames.pool("tank")).isEqualTo("tank");
    assertThat(DatasetNames.parent("tank/a/b")).isEqualTo("tank/a");
    assertThat(DatasetNames.parent("tank")).isEmpty();
    assertThat(DatasetNames.requireSnapshot("tank/a@s 1")).isEqualTo("tank/a@s 1");
    assertThatThrownBy(() -> DatasetNames.requireSnapshot("tank/a")).hasMessageContaining("snapshot");
    assertThatThrownBy(() -> DatasetNames.requireSnapshot("tank/a@")).hasMessageContaining("snapshot");
    assertThatThrownBy(() -> DatasetNames.requireSnapshot("tank@s/x")).hasMessageContaining("snapshot");
    assertThatThrownBy(() -> DatasetNames.requirePool("tank/a")).hasMessageContaining("pool");
    assertThatThrownBy(() -> DatasetNames.requireDataset("tank//a")).hasMessageContaining("valid");
    assertThatThrownBy(() -> DatasetNames.requireDataset("tank/a/")).hasMessageContaining("valid");
    assertThatThrownBy(() -> DatasetNames.requireDataset("/tank")).hasMessageContaining("valid");
    assertThatThrownBy(() -> DatasetNames.requireSnapshotName("a/b")).hasMessageContaining("short");
  }

  @Test
  void propertiesCarryTheirSources() {
    Map<String, Object> list = new LinkedHashMap<>();
    list.put("volsize", Map.of("value", 1L << 30)); // a statistic: no source
    list.put("volblocksize", Map.of("value", 16384L, "source", "")); // default
    list.put("refreservation", Map.of("value", 1_092_616_192L, "source", "tank/vol"));
    list.put("compression", Map.of("value", 15L, "source", "tank"));
    list.put("caravan:managed", Map.of("value", "true", "source", "tank/vol"));
    list.put("acme:tag", Map.of("value", "x", "source", "$recvd"));
    list.put("odd", "not a property pair");
    DatasetProperties p =
        DatasetProperties.from("tank/vol", stats(ZVOL, false, 0, ""), list);

    assertThat(p.type()).isEqualTo(DatasetType.VOLUME);
    assertThat(p.isVolume()).isTrue();
    assertThat(p.isSnapshot()).isFalse();
    assertThat(p.origin()).isEmpty();
    assertThat(p.all()).hasSize(6);
    assertThat(p.get("volsize").orElseThrow())
        .isEqualTo(new Property("volsize", "1073741824", true, PropertySource.NONE, ""));
    assertThat(p.get("volblocksize").orElseThrow().source()).isEqualTo(PropertySource.DEFAULT);
    assertThat(p.get("refreservation").orElseThrow().source()).isEqualTo(PropertySource.LOCAL);
    Property compression = p.get("compression").orElseThrow();
    assertThat(compression.source()).isEqualTo(PropertySource.INHERITED);
    assertThat(compression.setOn()).isEqualTo("tank");
    assertThat(compression).hasToString("compression=15 (inherited from tank)");
    assertThat(p.get("acme:tag").orElseThrow().source()).isEqualTo(PropertySource.RECEIVED);
    assertThat(p.volumeSize()).isEqualTo(1L << 30);
    assertThat(p.volumeBlockSize()).isEqualTo(16384);
    assertThat(p.refReservation()).isEqualTo(1_092_616_192L);
    assertThat(p.isThick()).isTrue();
    assertThat(p.compression()).contains(Compression.LZ4);
    assertThat(p.userProperty("caravan:managed")).contains("true");
    assertThat(p.isManagedBy(ManagedBy.CARAVAN)).isTrue();
    assertThat(p.isManagedBy(new ManagedBy("acme:tag", "x"))).as("received only").isFalse();
    assertThat(new ManagedBy("acme:tag", "x").marksReceived(p)).isTrue();
    assertThat(ManagedBy.CARAVAN.marksReceived(p)).as("set locally").isFalse();
    assertThatThrownBy(() -> p.get("caravan:managed").orElseThrow().asLong())
        .isInstanceOf(IllegalStateException.class);
  }

  @Test
  void anInheritedOrDifferentMarkerDoesNotMakeADatasetManaged() {
    DatasetProperties inherited =
        DatasetProperties.from(
            "tank/parent/vol",
            stats(ZVOL, false, 0, ""),
            Map.of(
                "caravan:managed", Map.of("value", "true", "source", "tank/parent"),
                "volsize", Map.of("value", 8192L)));
    assertThat(ManagedBy.CARAVAN.marks(inherited)).isFalse();
    assertThat(inherited.refReservation()).isZero();
    assertThat(inherited.isThick()).isFalse();

    DatasetProperties otherValue =
        DatasetProperties.from(
            "tank/vol",
            stats(ZVOL, false, 0, ""),
            Map.of("caravan:managed", Map.of("value", "false", "source", "tank/vol")));
    assertThat(ManagedBy.CARAVAN.marks(otherValue)).isFalse();
    DatasetProperties none = DatasetProperties.from("tank/vol", stats(ZVOL, false, 0, ""), Map.of());
    assertThat(ManagedBy.CARAVAN.marks(none)).isFalse();
    assertThatThrownBy(none::volumeSize).hasMessageContaining("has no volsize");
  }

  @Test
  void snapshotsAndFilesystems() {
    DatasetProperties snapshot =
        DatasetProperties.from(
            "tank/vol@s1",
            stats(ZVOL, true, 2, ""),
            Map.of("caravan:managed", Map.of("value", "true", "source", "tank/vol@s1")));
    assertThat(snapshot.type()).isEqualTo(DatasetType.SNAPSHOT);
    assertThat(snapshot.isVolume()).isTrue();
    assertThat(snapshot.clones()).isEqualTo(2);
    assertThat(ManagedBy.CARAVAN.marks(snapshot)).isTrue();

    DatasetProperties clone =
        DatasetProperties.from("tank/fs", stats(FILESYSTEM, false, 0, "tank/x@s"), Map.of());
    assertThat(clone.type()).isEqualTo(DatasetType.FILESYSTEM);
    assertThat(clone.isVolume()).isFalse();
    assertThat(clone.origin()).contains("tank/x@s");
    assertThat(DatasetProperties.from("tank/o", stats(9, false, 0, ""), Map.of()).type())
        .isEqualTo(DatasetType.OTHER);
  }

  @Test
  void markersMustBeUserProperties() {
    assertThat(ManagedBy.CARAVAN).hasToString("caravan:managed=true");
    assertThatThrownBy(() -> new ManagedBy("managed", "true"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> new ManagedBy("acme:managed", ""))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> UserProperties.checked(Map.of("caravan:managed", "x"), ManagedBy.CARAVAN))
        .hasMessageContaining("ownership marker");
  }

  @Test
  void compressionIndexes() {
    assertThat(Compression.fromIndex(15)).isEqualTo(Compression.LZ4);
    assertThat(Compression.fromIndex(2)).isEqualTo(Compression.OFF);
    assertThat(Compression.fromIndex(5)).isEqualTo(Compression.GZIP); // gzip-1
    assertThat(Compression.fromIndex((19L << 7) | 16)).isEqualTo(Compression.ZSTD); // zstd-19
    assertThat(Compression.ZSTD.zfsName()).isEqualTo("zstd");
    assertThatThrownBy(() -> Compression.fromIndex(4)).isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void poolHealthFollowsTheRootVdevLikeZpoolList() {
    assertThat(PoolHealth.fromVdevState(7, 0)).isEqualTo(PoolHealth.ONLINE);
    assertThat(PoolHealth.fromVdevState(6, 0)).isEqualTo(PoolHealth.DEGRADED);
    assertThat(PoolHealth.fromVdevState(5, 0)).isEqualTo(PoolHealth.FAULTED);
    assertThat(PoolHealth.fromVdevState(4, 2)).isEqualTo(PoolHealth.FAULTED);
    assertThat(PoolHealth.fromVdevState(4, 3)).isEqualTo(PoolHealth.UNAVAIL);
    assertThat(PoolHealth.fromVdevState(4, 15)).isEqualTo(PoolHealth.SPLIT);
    assertThat(PoolHealth.fromVdevState(3, 0)).isEqualTo(PoolHealth.REMOVED);
    assertThat(PoolHealth.fromVdevState(2, 0)).isEqualTo(PoolHealth.OFFLINE);
    assertThat(PoolHealth.fromVdevState(0, 0)).isEqualTo(PoolHealth.UNKNOWN);
    assertThat(PoolHealth.DEGRADED.isUsable()).isTrue();
    assertThat(PoolHealth.SUSPENDED.isUsable()).isFalse();

    long[] vdevStats = {0, 7, 0, 3L << 20, 1L << 30};
    Map<String, Object> config = Map.of("vdev_tree", Map.of("vdev_stats", vdevStats));
    assertThat(Pools.status("tank", reply(0, 0, config)))
        .isEqualTo(new PoolStatus("tank", PoolHealth.ONLINE, 1L << 30, 3L << 20, (1L << 30) - (3L << 20)));
    assertThat(Pools.status("tank", reply(0, 6, config)).health()).isEqualTo(PoolHealth.FAULTED);
    assertThat(Pools.status("tank", reply(5, 0, Map.of())).health()).isEqualTo(PoolHealth.FAULTED);
    Map<String, Object> suspended = new LinkedHashMap<>(config);
    suspended.put("suspended", 0L);
    assertThat(Pools.status("tank", reply(0, 0, suspended)).health())
        .isEqualTo(PoolHealth.SUSPENDED);
    assertThat(Pools.status("tank", reply(0, 0, Map.of())).health()).isEqualTo(PoolHealth.UNKNOWN);
  }

  @Test
  void zfsExceptionsNameOperationErrnoAndItems() {
    ZfsException e =
        new ZfsException(
            "snapshot", "tank/vol@s1", 17, ZfsException.itemErrors(Map.of("tank/vol@s1", 17L)), null);
    assertThat(e).hasMessage("snapshot tank/vol@s1: EEXIST (already exists); tank/vol@s1: EEXIST");
    assertThat(e.errnoName()).isEqualTo("EEXIST");
    assertThat(e.errno()).isEqualTo(17);
    assertThat(e.itemErrors()).containsExactly(Map.entry("tank/vol@s1", "EEXIST"));
    assertThat(new ZfsException("destroy", "tank/v", 16, Map.of(), "is it open?"))
        .hasMessage("destroy tank/v: EBUSY (busy): is it open?");
    assertThat(new ZfsException("receive", "tank/v@s", 1024 + 16))
        .hasMessage("receive tank/v@s: ZFS_ERR_STREAM_TRUNCATED (send stream ended early)");
    assertThat(new ZfsException("x", "y", 4242).errnoName()).isEqualTo("errno 4242");
  }

  @Test
  void refusalsCarryTheirReason() {
    ZfsRefusedException e =
        new ZfsRefusedException(ZfsRefusedException.Reason.SHRINK, "tank/v", "no");
    assertThat(e.reason()).isEqualTo(ZfsRefusedException.Reason.SHRINK);
    assertThat(e.dataset()).isEqualTo("tank/v");
    assertThat(Optional.of(e)).isPresent();
  }

  private static ZfsCommand.ObjsetStats stats(int type, boolean snapshot, long clones, String origin) {
    return new ZfsCommand.ObjsetStats(clones, 10, 99, type, snapshot, false, origin);
  }

  private static ZfsIoctls.Reply reply(int errno, long cookie, Map<String, Object> config) {
    return new ZfsIoctls.Reply(errno, "tank", cookie, stats(0, false, 0, ""), config);
  }

}
