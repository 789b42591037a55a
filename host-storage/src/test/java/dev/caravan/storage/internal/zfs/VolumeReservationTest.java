package dev.caravan.storage.internal.zfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Worked examples of the reservation rule (see {@link VolumeReservation}); the guest suite checks
 * the same figures against {@code zfs create -V} on real pools.
 */
class VolumeReservationTest {
  private static final long GIB = 1L << 30;
  private static final long K128 = 128 * 1024;

  @Test
  void plainPoolReservesDataPlusIndirectBlocksTwice() {
    // 1 GiB of 16 KiB blocks: 65536 blocks -> 64 L1 -> 1 L2 indirect blocks, plus 7 dnode
    // levels = 72 metadata blocks, twice (copies=1 + 1) at 128 KiB each.
    long expected = GIB + 72 * 2 * K128;
    assertThat(VolumeReservation.of(GIB, 16 * 1024, 1, List.of())).isEqualTo(expected);
    assertThat(expected).isEqualTo(1_092_616_192L);
    // mirrors and single disks do not change the figure
    List<VolumeReservation.Vdev> mirror =
        List.of(new VolumeReservation.Vdev("mirror", 0, 12, 2, 0));
    assertThat(VolumeReservation.of(GIB, 16 * 1024, 1, mirror)).isEqualTo(expected);
  }

  @Test
  void copiesMultiplyDataAndMetadataCopiesStopAtThree() {
    // 8 KiB blocks: 131072 -> 128 -> 1: 7 + 129 = 136 metadata blocks
    assertThat(VolumeReservation.of(GIB, 8192, 2, List.of())).isEqualTo(2 * GIB + 136 * 3 * K128);
    assertThat(VolumeReservation.of(GIB, 8192, 3, List.of())).isEqualTo(3 * GIB + 136 * 3 * K128);
  }

  @Test
  void raidzScalesSmallBlocksByTheirParityOverhead() {
    List<VolumeReservation.Vdev> raidz1x3 =
        List.of(new VolumeReservation.Vdev("raidz", 1, 12, 3, 0));
    // 128 KiB on raidz1 of 3 with 4 KiB sectors: 32 data + 16 parity = 48 sectors.
    assertThat(VolumeReservation.raidzAllocated(3, 1, 12, K128)).isEqualTo(48 * 4096);
    // 16 KiB: 4 data + 2 parity = 6 sectors: the same ratio, so no extra reservation.
    assertThat(VolumeReservation.raidzAllocated(3, 1, 12, 16 * 1024)).isEqualTo(6 * 4096);
    assertThat(VolumeReservation.of(GIB, 16 * 1024, 1, raidz1x3))
        .isEqualTo(GIB + 72 * 2 * K128);
    // 8 KiB: 2 data + 1 parity, padded to 4 sectors: 16 KiB per 8 KiB block, against 1.5x for
    // 128 KiB blocks. Data: 131072 * 16384 / 384 sectors, rounded down, times 256 sectors.
    assertThat(VolumeReservation.raidzAllocated(3, 1, 12, 8192)).isEqualTo(4 * 4096);
    long data = 131072L * 16384 / 384 * 256;
    assertThat(data).isEqualTo(1_431_655_680L);
    assertThat(VolumeReservation.of(GIB, 8192, 1, raidz1x3)).isEqualTo(data + 136 * 2 * K128);
  }

  @Test
  void theLeastEfficientTopLevelVdevDecides() {
    List<VolumeReservation.Vdev> mixed =
        List.of(
            new VolumeReservation.Vdev("mirror", 0, 12, 2, 0),
            new VolumeReservation.Vdev("raidz", 1, 12, 3, 0),
            new VolumeReservation.Vdev("raidz", 1, 12, 5, 0));
    // An 8 KiB block takes 4 sectors (2 data, 1 parity, 1 pad) on both raidz vdevs, but the
    // 128 KiB reference block takes 40 sectors on the 5-wide one and 48 on the 3-wide one, so
    // relative to the reference the 5-wide one is the less efficient.
    List<VolumeReservation.Vdev> worst = List.of(mixed.get(2));
    assertThat(VolumeReservation.of(GIB, 8192, 1, mixed))
        .isEqualTo(VolumeReservation.of(GIB, 8192, 1, worst))
        .isEqualTo(131072L * 16384 / 320 * 256 + 136 * 2 * K128)
        .isGreaterThan(VolumeReservation.of(GIB, 8192, 1, List.of(mixed.get(1))));
  }

  @Test
  void draidAllocatesWholeRows() {
    // draid1 with 4 data disks, 4 KiB sectors: a 16 KiB block fills one row of 5 sectors.
    assertThat(VolumeReservation.draidAllocated(5, 4, 12, 16 * 1024)).isEqualTo(5 * 4096);
    // 128 KiB: 8 rows of 5
    assertThat(VolumeReservation.draidAllocated(5, 4, 12, K128)).isEqualTo(40 * 4096);
    List<VolumeReservation.Vdev> draid = List.of(new VolumeReservation.Vdev("draid", 1, 12, 7, 4));
    // same ratio (5/4) for both sizes: no extra
    assertThat(VolumeReservation.of(GIB, 16 * 1024, 1, draid)).isEqualTo(GIB + 72 * 2 * K128);
  }

  @Test
  void readsTopLevelVdevsFromAPoolConfig() {
    Map<String, Object> config =
        Map.of(
            "vdev_tree",
            Map.of(
                "type",
                "root",
                "children",
                List.of(
                    Map.of("type", "raidz", "nparity", 2L, "ashift", 12L, "children",
                        List.of(Map.of(), Map.of(), Map.of(), Map.of())),
                    Map.of("type", "file", "ashift", 9L))));
    assertThat(VolumeReservation.topLevelVdevs(config))
        .containsExactly(
            new VolumeReservation.Vdev("raidz", 2, 12, 4, 0),
            new VolumeReservation.Vdev("file", 0, 9, 0, 0));
    assertThat(VolumeReservation.topLevelVdevs(Map.of())).isEmpty();
  }

  @Test
  void refusesNonsense() {
    assertThatThrownBy(() -> VolumeReservation.of(0, 8192, 1, List.of()))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> VolumeReservation.of(GIB, 8192, 0, List.of()))
        .isInstanceOf(IllegalArgumentException.class);
  }
}
