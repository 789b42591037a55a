package dev.caravan.storage.zfs;

import static dev.caravan.storage.zfs.GuestZfs.MIB;
import static dev.caravan.storage.zfs.GuestZfs.POOL;
import static dev.caravan.storage.zfs.GuestZfs.cli;
import static dev.caravan.storage.zfs.GuestZfs.fresh;
import static dev.caravan.storage.zfs.GuestZfs.freshWithDevice;
import static dev.caravan.storage.zfs.GuestZfs.zfsGet;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.internal.zfs.ZfsModuleVersion;
import dev.caravan.storage.internal.zfs.ZvolDevices;
import dev.caravan.storage.testing.HostRequirements;
import dev.caravan.storage.zfs.ZfsRefusedException.Reason;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Every facade operation against real OpenZFS, refusals included. Runs in the guest only. */
class ZfsGuestTest {
  private static final long SIZE = 64 * MIB;
  private static final int CHUNK = 64 * 1024;
  private static final Duration DEVICE_WAIT = Duration.ofSeconds(30);

  private static Zfs zfs;

  @BeforeAll
  static void open() {
    if (HostRequirements.hasZfs()) {
      zfs = Zfs.open();
    }
  }

  // Per test rather than in @BeforeAll, so that on the host every test is reported skipped with
  // the reason, instead of the class silently reporting no tests at all.
  @BeforeEach
  void requireRealZfs() {
    HostRequirements.assumeZfs();
  }

  @AfterAll
  static void close() {
    if (zfs != null) {
      zfs.close();
    }
  }

  // ---------------------------------------------------------------------------------------
  // Pools

  @Test
  void theTestPoolIsOnlineWithTheSpaceZpoolReports() {
    PoolStatus pool = zfs.pool(POOL).orElseThrow();
    assertThat(pool.health()).isEqualTo(PoolHealth.ONLINE);
    assertThat(pool.isUsable()).isTrue();
    String[] cliValues = cli("zpool", "list", "-Hp", "-o", "size,alloc,free,health", POOL).split("\t", -1);
    assertThat(pool.size()).isEqualTo(Long.parseLong(cliValues[0]));
    assertThat(pool.allocated()).isPositive();
    assertThat(pool.free()).isEqualTo(pool.size() - pool.allocated());
    assertThat(cliValues[3]).isEqualTo("ONLINE");
    assertThat(zfs.pool("no-such-pool")).isEmpty();
  }

  @Test
  void theLoadedModuleIsAVerifiedVersionAndOpenAcceptsIt() throws Exception {
    String loaded = Files.readString(ZfsModuleVersion.SYSFS).strip();
    assertThat(ZfsModuleVersion.upstream(loaded))
        .as("/sys/module/zfs/version %s", loaded)
        .hasValueSatisfying(v -> assertThat(ZfsModuleVersion.VERIFIED).contains(v));
    try (Zfs opened = Zfs.open()) {
      assertThat(opened.pool(POOL)).isPresent();
    }
  }

  @Test
  void aDegradedPoolIsUsableAndAnExportedOneIsRefused() throws Exception {
    try (GuestZfs.FilePool pool = new GuestZfs.FilePool("mirror", 2)) {
      assertThat(zfs.pool(pool.name).orElseThrow().health()).isEqualTo(PoolHealth.ONLINE);
      cli("zpool", "offline", pool.name, pool.files.get(1).toString());
      assertThat(zfs.pool(pool.name).orElseThrow().health()).isEqualTo(PoolHealth.DEGRADED);
      zfs.createZvol(ZvolSpec.of(pool.name + "/v", 8 * MIB).sparse(true));
      assertThat(zfs.exists(pool.name + "/v")).isTrue();

      pool.export();
      assertThat(zfs.pool(pool.name)).isEmpty();
      assertThatThrownBy(() -> zfs.createZvol(ZvolSpec.of(pool.name + "/w", 8 * MIB)))
          .isInstanceOfSatisfying(
              ZfsRefusedException.class,
              e -> assertThat(e.reason()).isEqualTo(Reason.POOL_UNAVAILABLE))
          .hasMessage("pool " + pool.name + " is not imported");
    }
  }

  // ---------------------------------------------------------------------------------------
  // Create and properties

  @Test
  void thickVolumesReserveWhatTheCliReservesWhenCreatedAndGrown() {
    String name = fresh("thick");
    zfs.createZvol(ZvolSpec.of(name, SIZE).userProperty("caravan:source", "none"));
    String cliTwin = fresh("cli");
    cli("zfs", "create", "-V", Long.toString(SIZE), cliTwin);

    DatasetProperties p = zfs.properties(name);
    assertThat(p.type()).isEqualTo(DatasetType.VOLUME);
    assertThat(p.volumeSize()).isEqualTo(SIZE);
    assertThat(p.volumeBlockSize()).isEqualTo(16384);
    assertThat(p.refReservation())
        .isEqualTo(Long.parseLong(zfsGet("refreservation", cliTwin)))
        .isGreaterThan(SIZE);
    assertThat(p.isThick()).isTrue();
    assertThat(p.get("caravan:managed").orElseThrow().source()).isEqualTo(PropertySource.LOCAL);
    assertThat(p.userProperty("caravan:source")).contains("none");
    assertThat(p.isManagedBy(ManagedBy.CARAVAN)).isTrue();

    zfs.growZvol(name, 3 * SIZE);
    cli("zfs", "set", "volsize=" + 3 * SIZE, cliTwin);
    DatasetProperties grown = zfs.properties(name);
    assertThat(grown.volumeSize()).isEqualTo(3 * SIZE);
    assertThat(grown.refReservation())
        .isEqualTo(Long.parseLong(zfsGet("refreservation", cliTwin)));
    zfs.growZvol(name, 3 * SIZE); // same size: nothing to do
    assertThat(zfs.properties(name).refReservation()).isEqualTo(grown.refReservation());
  }

  @Test
  void onRaidzTheReservationMatchesTheCliToo() throws Exception {
    try (GuestZfs.FilePool pool = new GuestZfs.FilePool("raidz1", 3, "-o", "ashift=12")) {
      zfs.createZvol(ZvolSpec.of(pool.name + "/v", 32 * MIB).blockSize(8192));
      cli("zfs", "create", "-V", "32M", "-o", "volblocksize=8k", pool.name + "/cli");
      long ours = zfs.properties(pool.name + "/v").refReservation();
      assertThat(ours).isEqualTo(Long.parseLong(zfsGet("refreservation", pool.name + "/cli")));
      assertThat(ours).as("raidz parity overhead on 8K blocks").isGreaterThan(40 * MIB);
    }
  }

  @Test
  void createsSparseAndCompressedVolumesAndTheirParents() {
    String name = fresh("parents") + "/a/b/vol";
    zfs.createZvol(
        ZvolSpec.of(name, SIZE).sparse(true).blockSize(8192).compression(Compression.LZ4));
    DatasetProperties p = zfs.properties(name);
    assertThat(p.refReservation()).isZero();
    assertThat(p.isThick()).isFalse();
    assertThat(p.volumeBlockSize()).isEqualTo(8192);
    assertThat(p.compression()).contains(Compression.LZ4);
    assertThat(p.get("compression").orElseThrow().source()).isEqualTo(PropertySource.LOCAL);

    String parent = DatasetNames.parent(name);
    DatasetProperties container = zfs.properties(parent);
    assertThat(container.type()).isEqualTo(DatasetType.FILESYSTEM);
    assertThat(container.isManagedBy(ManagedBy.CARAVAN)).as("parents are not marked").isFalse();
    assertThat(container.get("canmount").orElseThrow().asLong()).as("canmount=off").isZero();
  }

  @Test
  void createRefusesAnExistingName() {
    String name = fresh("twice");
    zfs.createZvol(ZvolSpec.of(name, SIZE).sparse(true));
    assertThatThrownBy(() -> zfs.createZvol(ZvolSpec.of(name, SIZE)))
        .isInstanceOfSatisfying(
            ZfsException.class, e -> assertThat(e.errnoName()).isEqualTo("EEXIST"))
        .hasMessageStartingWith("create " + name + ": EEXIST");
  }

  @Test
  void propertiesReportInheritedAndStatisticSources() {
    String parent = fresh("inherit");
    String name = parent + "/vol";
    zfs.createZvol(ZvolSpec.of(name, SIZE).sparse(true));
    GuestZfs.setProperty(parent, "acme:tier", "gold");

    DatasetProperties p = zfs.properties(name);
    Property tier = p.get("acme:tier").orElseThrow();
    assertThat(tier.value()).isEqualTo("gold");
    assertThat(tier.source()).isEqualTo(PropertySource.INHERITED);
    assertThat(tier.setOn()).isEqualTo(parent);
    assertThat(p.get("volsize").orElseThrow().source()).isEqualTo(PropertySource.NONE);
    assertThat(p.get("used").orElseThrow().numeric()).isTrue();
    assertThat(zfs.properties(POOL).get("available").orElseThrow().asLong()).isPositive();
    assertThat(zfs.exists(name)).isTrue();
    assertThat(zfs.exists(name + "-not")).isFalse();
    assertThatThrownBy(() -> zfs.properties(name + "-not"))
        .isInstanceOfSatisfying(
            ZfsException.class, e -> assertThat(e.errnoName()).isEqualTo("ENOENT"));
  }

  @Test
  void listsChildrenAndSnapshotsInOrder() {
    String parent = fresh("list");
    for (String child : new String[] {"c", "a", "b"}) {
      zfs.createZvol(ZvolSpec.of(parent + "/" + child, SIZE).sparse(true));
    }
    zfs.createZvol(ZvolSpec.of(parent + "/a2/grandchild", SIZE).sparse(true));
    assertThat(zfs.children(parent))
        .containsExactly(parent + "/a", parent + "/a2", parent + "/b", parent + "/c");
    assertThat(zfs.children(parent + "/a")).isEmpty();

    String volume = parent + "/a";
    for (String snap : new String[] {"zz", "mm", "aa"}) {
      zfs.snapshot(volume, snap);
    }
    assertThat(zfs.snapshots(volume))
        .as("oldest first")
        .containsExactly(volume + "@zz", volume + "@mm", volume + "@aa");
    assertThat(zfs.snapshots(parent + "/b")).isEmpty();
    assertThatThrownBy(() -> zfs.children(parent + "/missing"))
        .isInstanceOfSatisfying(
            ZfsException.class, e -> assertThat(e.errnoName()).isEqualTo("ENOENT"));
  }

  // ---------------------------------------------------------------------------------------
  // Snapshots

  @Test
  void snapshotsCarryTheMarkerAndUserPropertiesAndAreDestroyedOnce() {
    String name = fresh("snap");
    zfs.createZvol(ZvolSpec.of(name, SIZE).sparse(true));
    String snapshot = zfs.snapshot(name, "s1", Map.of("caravan:snapshot-id", "abc"));
    assertThat(snapshot).isEqualTo(name + "@s1");
    DatasetProperties p = zfs.properties(snapshot);
    assertThat(p.isSnapshot()).isTrue();
    assertThat(p.isVolume()).isTrue();
    assertThat(p.get("caravan:managed").orElseThrow().source()).isEqualTo(PropertySource.LOCAL);
    assertThat(p.userProperty("caravan:snapshot-id")).contains("abc");

    assertThatThrownBy(() -> zfs.snapshot(name, "s1"))
        .isInstanceOfSatisfying(
            ZfsException.class,
            e -> {
              assertThat(e.errnoName()).isEqualTo("EEXIST");
              assertThat(e.itemErrors()).containsEntry(snapshot, "EEXIST");
            });

    assertThat(zfs.destroySnapshot(snapshot)).isTrue();
    assertThat(zfs.exists(snapshot)).isFalse();
    assertThat(zfs.destroySnapshot(snapshot)).isFalse();
  }

  @Test
  void aSnapshotWithAClonePresentIsNotDestroyed() {
    String name = fresh("cloned");
    zfs.createZvol(ZvolSpec.of(name, SIZE).sparse(true));
    String snapshot = zfs.snapshot(name, "s1");
    GuestZfs.dependentClone(snapshot, fresh("dependent"));
    assertThat(zfs.properties(snapshot).clones()).isEqualTo(1);
    assertThatThrownBy(() -> zfs.destroySnapshot(snapshot))
        .isInstanceOfSatisfying(
            ZfsRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.HAS_CLONES));
    assertThat(zfs.exists(snapshot)).isTrue();
  }

  @Test
  void aSnapshotTakenByHandOfAManagedVolumeIsNotOurs() {
    String name = fresh("handsnap");
    zfs.createZvol(ZvolSpec.of(name, SIZE).sparse(true));
    GuestZfs.plainSnapshot(name + "@manual");
    // it inherits caravan:managed from the volume, which does not count
    assertThat(zfs.properties(name + "@manual").get("caravan:managed").orElseThrow().source())
        .isEqualTo(PropertySource.INHERITED);
    assertThatThrownBy(() -> zfs.destroySnapshot(name + "@manual"))
        .isInstanceOfSatisfying(
            ZfsRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.NOT_MANAGED));
    assertThat(zfs.exists(name + "@manual")).isTrue();
  }

  // ---------------------------------------------------------------------------------------
  // Datasets Caravan did not create

  @Test
  void anUnmanagedVolumeIsNeverModifiedOrDestroyed() {
    String foreign = fresh("foreign") + "/vol";
    GuestZfs.foreignVolume(foreign, SIZE);
    GuestZfs.setProperty(DatasetNames.parent(foreign), "caravan:managed", "true"); // inherited

    for (Runnable call :
        new Runnable[] {
          () -> zfs.destroy(foreign),
          () -> zfs.growZvol(foreign, 2 * SIZE),
          () -> zfs.snapshot(foreign, "s1"),
        }) {
      assertThatThrownBy(call::run)
          .isInstanceOfSatisfying(
              ZfsRefusedException.class,
              e -> assertThat(e.reason()).isEqualTo(Reason.NOT_MANAGED))
          .hasMessageContaining("does not carry caravan:managed=true");
    }
    assertThat(zfs.exists(foreign)).isTrue();
    assertThat(zfs.properties(foreign).volumeSize()).isEqualTo(SIZE);
    assertThat(zfs.snapshots(foreign)).isEmpty();
  }

  @Test
  void anotherAgentsMarkerKeepsTheManagersApart() {
    String name = fresh("agent");
    try (Zfs acme = Zfs.open(new ManagedBy("acme:owner", "agent-7"))) {
      acme.createZvol(ZvolSpec.of(name, SIZE).sparse(true));
      assertThat(acme.properties(name).userProperty("acme:owner")).contains("agent-7");
      assertThatThrownBy(() -> zfs.destroy(name)).isInstanceOf(ZfsRefusedException.class);
      assertThat(acme.destroy(name)).isTrue();
    }
  }

  // ---------------------------------------------------------------------------------------
  // Grow

  @Test
  void aGrownVolumesDeviceGrowsToo() {
    String name = freshWithDevice("grow");
    zfs.createZvol(ZvolSpec.of(name, SIZE));
    Path device = zfs.zvolDevice(name, DEVICE_WAIT);
    assertThat(GuestZfs.deviceSize(device)).isEqualTo(SIZE);
    zfs.growZvol(name, 2 * SIZE);
    assertThat(GuestZfs.deviceSize(device)).isEqualTo(2 * SIZE);
  }

  @Test
  void growsASparseVolumeWithoutReserving() {
    String name = fresh("sparsegrow");
    zfs.createZvol(ZvolSpec.of(name, SIZE).sparse(true));
    zfs.growZvol(name, 2 * SIZE);
    DatasetProperties p = zfs.properties(name);
    assertThat(p.volumeSize()).isEqualTo(2 * SIZE);
    assertThat(p.refReservation()).isZero();
  }

  @Test
  void refusesToShrinkOrToGrowToAPartialBlock() {
    String name = fresh("shrink");
    zfs.createZvol(ZvolSpec.of(name, SIZE).sparse(true));
    assertThatThrownBy(() -> zfs.growZvol(name, SIZE / 2))
        .isInstanceOfSatisfying(
            ZfsRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.SHRINK))
        .hasMessage(
            "refusing to shrink " + name + " from " + SIZE + " to " + SIZE / 2
                + " bytes: volumes only grow");
    assertThatThrownBy(() -> zfs.growZvol(name, SIZE + 512))
        .isInstanceOf(IllegalArgumentException.class);
    assertThat(zfs.properties(name).volumeSize()).isEqualTo(SIZE);
    assertThatThrownBy(() -> zfs.growZvol(DatasetNames.parent(name), 2 * SIZE))
        .isInstanceOfSatisfying(
            ZfsRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.NOT_A_VOLUME));
  }

  // ---------------------------------------------------------------------------------------
  // Destroy

  @Test
  void destroysAManagedLeafOnce() {
    String name = fresh("leaf");
    zfs.createZvol(ZvolSpec.of(name, SIZE));
    assertThat(zfs.destroy(name)).isTrue();
    assertThat(zfs.exists(name)).isFalse();
    assertThat(zfs.destroy(name)).isFalse();
  }

  @Test
  void refusesToDestroyAVolumeWithSnapshots() {
    String name = fresh("withsnap");
    zfs.createZvol(ZvolSpec.of(name, SIZE).sparse(true));
    zfs.snapshot(name, "keep");
    assertThatThrownBy(() -> zfs.destroy(name))
        .isInstanceOfSatisfying(
            ZfsRefusedException.class,
            e -> assertThat(e.reason()).isEqualTo(Reason.HAS_SNAPSHOTS))
        .hasMessageContaining(name + "@keep");
    assertThat(zfs.exists(name)).isTrue();
  }

  @Test
  void refusesToDestroyADatasetWithChildren() {
    String parent = fresh("nonleaf");
    // a managed filesystem, made the way another tool using the same marker might
    GuestZfs.filesystem(parent, Map.of("caravan:managed", "true"));
    zfs.createZvol(ZvolSpec.of(parent + "/child", SIZE).sparse(true));
    assertThatThrownBy(() -> zfs.destroy(parent))
        .isInstanceOfSatisfying(
            ZfsRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.HAS_CHILDREN));
    assertThat(zfs.exists(parent + "/child")).isTrue();
  }

  @Test
  void reportsAVolumeThatStaysOpenAsBusy() throws Exception {
    String name = freshWithDevice("busy");
    zfs.createZvol(ZvolSpec.of(name, SIZE).sparse(true));
    Path device = zfs.zvolDevice(name, DEVICE_WAIT);
    try (FileChannel open = FileChannel.open(device, StandardOpenOption.READ)) {
      long started = System.nanoTime();
      assertThatThrownBy(() -> zfs.destroy(name))
          .isInstanceOfSatisfying(
              ZfsException.class, e -> assertThat(e.errnoName()).isEqualTo("EBUSY"))
          .hasMessageContaining("is it open, mounted or in use?");
      assertThat(Duration.ofNanos(System.nanoTime() - started)).isGreaterThan(Duration.ofSeconds(2));
      assertThat(open.isOpen()).isTrue();
    }
    assertThat(zfs.destroy(name)).as("closed: destroyable again").isTrue();
  }

  // ---------------------------------------------------------------------------------------
  // Devices

  @Test
  void findsTheDeviceThroughUdevAndWithoutIt() throws Exception {
    String name = freshWithDevice("dev");
    zfs.createZvol(ZvolSpec.of(name, SIZE).sparse(true));
    Path device = zfs.zvolDevice(name, DEVICE_WAIT);
    if (ZvolDevices.udevRunning()) {
      assertThat(device).isEqualTo(Path.of("/dev/zvol", name));
    }
    Path zd = ZvolDevices.findByName(name).orElseThrow();
    assertThat(zd.getFileName().toString()).matches("zd[0-9]+");
    assertThat(device.toRealPath()).isEqualTo(zd.toRealPath());
    assertThat(ZvolDevices.nameOf(zd)).contains(name);
    assertThat(Files.isRegularFile(zd)).isFalse();
    assertThat(GuestZfs.deviceSize(zd)).isEqualTo(SIZE);

    String deviceless = fresh("nodev"); // volmode=none, inherited
    zfs.createZvol(ZvolSpec.of(deviceless, SIZE).sparse(true));
    assertThatThrownBy(() -> zfs.zvolDevice(deviceless, DEVICE_WAIT))
        .isInstanceOfSatisfying(
            ZfsException.class, e -> assertThat(e.errnoName()).isEqualTo("ENODEV"))
        .hasMessageContaining("volmode=none");
    assertThatThrownBy(() -> zfs.zvolDevice(DatasetNames.parent(name), Duration.ZERO))
        .isInstanceOfSatisfying(
            ZfsRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.NOT_A_VOLUME));
  }

  // ---------------------------------------------------------------------------------------
  // Independent clones

  @Test
  void anIndependentCloneHasTheSameDataAndOutlivesItsSource() throws Exception {
    String source = freshWithDevice("src");
    zfs.createZvol(ZvolSpec.of(source, SIZE).blockSize(8192).compression(Compression.LZ4));
    Path sourceDevice = zfs.zvolDevice(source, DEVICE_WAIT);
    byte[] head = GuestZfs.pattern(1, CHUNK);
    byte[] tail = GuestZfs.pattern(2, CHUNK);
    GuestZfs.write(sourceDevice, 0, head);
    GuestZfs.write(sourceDevice, SIZE - CHUNK, tail);
    String snapshot = zfs.snapshot(source, "base");

    String copy = freshWithDevice("copy") + "/nested";
    zfs.cloneIndependent(
        snapshot, ZvolSpec.of(copy, SIZE).userProperty("caravan:source", snapshot));

    DatasetProperties p = zfs.properties(copy);
    assertThat(p.origin()).as("not a dependent clone").isEmpty();
    assertThat(zfs.snapshots(copy)).as("the received snapshot is gone").isEmpty();
    assertThat(p.volumeSize()).isEqualTo(SIZE);
    assertThat(p.volumeBlockSize()).isEqualTo(8192);
    assertThat(p.isManagedBy(ManagedBy.CARAVAN)).isTrue();
    assertThat(p.get("caravan:managed").orElseThrow().source()).isEqualTo(PropertySource.LOCAL);
    assertThat(p.userProperty("caravan:source")).contains(snapshot);
    assertThat(p.isThick()).isTrue();
    assertThat(zfs.properties(snapshot).clones()).isZero();

    Path copyDevice = zfs.zvolDevice(copy, DEVICE_WAIT);
    assertSameBytes(GuestZfs.read(copyDevice, 0, CHUNK), head);
    assertSameBytes(GuestZfs.read(copyDevice, SIZE - CHUNK, CHUNK), tail);

    assertThat(zfs.destroySnapshot(snapshot)).isTrue();
    assertThat(zfs.destroy(source)).isTrue();
    assertThat(zfs.exists(copy)).isTrue();
    assertSameBytes(GuestZfs.read(copyDevice, 0, CHUNK), head);
    assertSameBytes(GuestZfs.read(copyDevice, SIZE - CHUNK, CHUNK), tail);
  }

  /** Compares without AssertJ's element-by-element array comparison (slow in the guest). */
  private static void assertSameBytes(byte[] actual, byte[] expected) {
    assertThat(Arrays.mismatch(actual, expected)).as("first differing byte").isEqualTo(-1);
  }

  @Test
  void aLargerSparseCloneKeepsTheDataAndGrows() throws Exception {
    String source = freshWithDevice("srcbig");
    zfs.createZvol(ZvolSpec.of(source, SIZE).sparse(true));
    byte[] head = GuestZfs.pattern(3, CHUNK);
    GuestZfs.write(zfs.zvolDevice(source, DEVICE_WAIT), 0, head);
    String snapshot = zfs.snapshot(source, "s");

    String copy = freshWithDevice("bigger");
    zfs.cloneIndependent(snapshot, ZvolSpec.of(copy, 2 * SIZE).sparse(true));
    DatasetProperties p = zfs.properties(copy);
    assertThat(p.volumeSize()).isEqualTo(2 * SIZE);
    assertThat(p.refReservation()).isZero();
    Path device = zfs.zvolDevice(copy, DEVICE_WAIT);
    assertThat(GuestZfs.deviceSize(device)).isEqualTo(2 * SIZE);
    assertSameBytes(GuestZfs.read(device, 0, CHUNK), head);
  }

  @Test
  void aCopyInterruptedAfterItsReceiveIsUnfinishedUntilFinishCopy() throws Exception {
    String source = freshWithDevice("srchalf");
    zfs.createZvol(ZvolSpec.of(source, SIZE));
    byte[] head = GuestZfs.pattern(5, CHUNK);
    byte[] tail = GuestZfs.pattern(6, CHUNK);
    GuestZfs.write(zfs.zvolDevice(source, DEVICE_WAIT), 0, head);
    GuestZfs.write(zfs.zvolDevice(source, DEVICE_WAIT), SIZE - CHUNK, tail);
    String snapshot = zfs.snapshot(source, "base");
    String copy = freshWithDevice("half");
    ZvolSpec spec =
        ZvolSpec.of(copy, 2 * SIZE)
            .compression(Compression.LZ4)
            .userProperty("caravan:csi-name", "half")
            .userProperty("caravan:source", snapshot);

    zfs.receiveCopy(snapshot, spec); // what a process that died right after the receive leaves

    DatasetProperties half = zfs.properties(copy);
    assertThat(zfs.isUnfinishedCopy(half)).isTrue();
    assertThat(half.isManagedBy(ManagedBy.CARAVAN)).as("received only").isFalse();
    assertThat(half.userProperty("caravan:csi-name")).contains("half");
    assertThat(half.get("caravan:csi-name").orElseThrow().source()).isEqualTo(PropertySource.RECEIVED);
    assertThat(cli("zfs", "get", "-H", "-o", "value,source", "caravan:csi-name,caravan:managed", copy))
        .isEqualTo("half\treceived\ntrue\treceived");
    assertThat(zfs.snapshots(copy)).containsExactly(copy + "@base");
    assertThat(half.volumeSize()).isEqualTo(SIZE);
    // Nothing but finishCopy touches it.
    assertThatThrownBy(() -> zfs.destroy(copy))
        .isInstanceOfSatisfying(
            ZfsRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.NOT_MANAGED));
    assertThatThrownBy(() -> zfs.snapshot(copy, "s"))
        .isInstanceOfSatisfying(
            ZfsRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.NOT_MANAGED));
    assertThatThrownBy(() -> zfs.finishCopy(spec.userProperty("caravan:csi-name", "other")))
        .isInstanceOfSatisfying(
            ZfsRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.NOT_MANAGED))
        .hasMessageContaining("not an unfinished copy made by this manager");
    assertThat(zfs.snapshots(copy)).as("a refusal changes nothing").hasSize(1);

    zfs.finishCopy(spec);

    DatasetProperties done = zfs.properties(copy);
    assertThat(zfs.isUnfinishedCopy(done)).isFalse();
    assertThat(done.isManagedBy(ManagedBy.CARAVAN)).isTrue();
    assertThat(done.get("caravan:csi-name").orElseThrow().source()).isEqualTo(PropertySource.LOCAL);
    assertThat(zfs.snapshots(copy)).as("the received snapshot is gone").isEmpty();
    assertThat(done.volumeSize()).isEqualTo(2 * SIZE);
    assertThat(done.isThick()).isTrue();
    assertThat(done.compression()).contains(Compression.LZ4);
    Path device = zfs.zvolDevice(copy, DEVICE_WAIT);
    assertSameBytes(GuestZfs.read(device, 0, CHUNK), head);
    assertSameBytes(GuestZfs.read(device, SIZE - CHUNK, CHUNK), tail);

    zfs.finishCopy(spec); // finishing a finished copy changes nothing
    assertThat(zfs.properties(copy).volumeSize()).isEqualTo(2 * SIZE);
  }

  @Test
  void cloneRefusals() {
    String source = fresh("srcref");
    zfs.createZvol(ZvolSpec.of(source, SIZE).sparse(true));
    String snapshot = zfs.snapshot(source, "s");

    assertThatThrownBy(() -> zfs.cloneIndependent(snapshot, ZvolSpec.of(fresh("small"), SIZE / 2)))
        .isInstanceOfSatisfying(
            ZfsRefusedException.class, e -> assertThat(e.reason()).isEqualTo(Reason.SHRINK));
    assertThatThrownBy(
            () -> zfs.cloneIndependent(snapshot, ZvolSpec.of(fresh("bs"), SIZE).blockSize(4096)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("volblocksize");
    assertThatThrownBy(() -> zfs.cloneIndependent(source + "@nope", ZvolSpec.of(fresh("x"), SIZE)))
        .isInstanceOfSatisfying(
            ZfsException.class, e -> assertThat(e.errnoName()).isEqualTo("ENOENT"));
    String existing = fresh("exists");
    zfs.createZvol(ZvolSpec.of(existing, SIZE).sparse(true));
    assertThatThrownBy(() -> zfs.cloneIndependent(snapshot, ZvolSpec.of(existing, SIZE)))
        .isInstanceOf(ZfsException.class)
        .hasMessageContaining("receive " + existing + "@s");
    assertThat(zfs.snapshots(existing)).isEmpty();
    assertThat(zfs.properties(existing).isManagedBy(ManagedBy.CARAVAN)).isTrue();
  }
}
