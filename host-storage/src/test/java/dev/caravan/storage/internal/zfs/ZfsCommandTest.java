package dev.caravan.storage.internal.zfs;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Pins {@code zfs_cmd_t} to OpenZFS 2.3. The expected offsets were printed with {@code offsetof}
 * by a C program compiled against the zfs-2.3.2 headers ({@code include/sys/zfs_ioctl.h}, userland
 * include paths), x86_64, gcc 12.
 */
class ZfsCommandTest {
  private static final Map<String, Long> OFFSETS_FROM_C =
      Map.ofEntries(
          Map.entry("zc_name", 0L),
          Map.entry("zc_nvlist_src", 4096L),
          Map.entry("zc_nvlist_src_size", 4104L),
          Map.entry("zc_nvlist_dst", 4112L),
          Map.entry("zc_nvlist_dst_size", 4120L),
          Map.entry("zc_nvlist_dst_filled", 4128L),
          Map.entry("zc_pad2", 4132L),
          Map.entry("zc_history", 4136L),
          Map.entry("zc_value", 4144L),
          Map.entry("zc_string", 12336L),
          Map.entry("zc_guid", 12592L),
          Map.entry("zc_nvlist_conf", 12600L),
          Map.entry("zc_nvlist_conf_size", 12608L),
          Map.entry("zc_cookie", 12616L),
          Map.entry("zc_objset_type", 12624L),
          Map.entry("zc_perm_action", 12632L),
          Map.entry("zc_history_len", 12640L),
          Map.entry("zc_history_offset", 12648L),
          Map.entry("zc_obj", 12656L),
          Map.entry("zc_iflags", 12664L),
          Map.entry("zc_share", 12672L),
          Map.entry("zc_objset_stats", 12704L),
          Map.entry("zc_begin_record", 12992L),
          Map.entry("zc_inject_record", 13296L),
          Map.entry("zc_defer_destroy", 13648L),
          Map.entry("zc_flags", 13652L),
          Map.entry("zc_action_handle", 13656L),
          Map.entry("zc_cleanup_fd", 13664L),
          Map.entry("zc_simple", 13668L),
          Map.entry("zc_pad", 13669L),
          Map.entry("zc_sendobj", 13672L),
          Map.entry("zc_fromobj", 13680L),
          Map.entry("zc_createtxg", 13688L),
          Map.entry("zc_stat", 13696L),
          Map.entry("zc_zoneid", 13736L));

  @Test
  void layoutMatchesTheCStruct() {
    assertThat(ZfsCommand.LAYOUT.byteSize()).isEqualTo(13744);
    OFFSETS_FROM_C.forEach(
        (field, offset) ->
            assertThat(ZfsCommand.LAYOUT.byteOffset(groupElement(field)))
                .as(field)
                .isEqualTo(offset));
    assertThat(ZfsCommand.LAYOUT.memberLayouts()).hasSize(OFFSETS_FROM_C.size());
  }

  @Test
  void objsetStatsMatchTheCStruct() {
    // dmu_objset_stats_t: sizeof 288; dds_type at 24, dds_is_snapshot at 28, dds_origin at 31
    assertThat(ZfsCommand.OBJSET_STATS.byteSize()).isEqualTo(288);
    assertThat(ZfsCommand.OBJSET_STATS.byteOffset(groupElement("dds_type"))).isEqualTo(24);
    assertThat(ZfsCommand.OBJSET_STATS.byteOffset(groupElement("dds_is_snapshot"))).isEqualTo(28);
    assertThat(ZfsCommand.OBJSET_STATS.byteOffset(groupElement("dds_origin"))).isEqualTo(31);
  }

  @Test
  void fieldsRoundTrip() {
    try (Arena arena = Arena.ofConfined()) {
      ZfsCommand zc = ZfsCommand.allocate(arena).name("tank/a/much/longer/name").name("tank/vol");
      assertThat(zc.name()).isEqualTo("tank/vol");
      zc.cookie(42).simple(true);
      assertThat(zc.cookie()).isEqualTo(42);
      assertThat(zc.segment().get(ValueLayout.JAVA_BYTE, 13668)).isEqualTo((byte) 1);

      MemorySegment buffer = arena.allocate(1024);
      zc.destination(buffer);
      assertThat(zc.segment().get(ValueLayout.JAVA_LONG, 4112)).isEqualTo(buffer.address());
      assertThat(zc.destinationSize()).isEqualTo(1024);
      assertThat(zc.destinationFilled()).isFalse();

      MemorySegment stats = zc.segment().asSlice(12704, 288);
      stats.set(ValueLayout.JAVA_LONG, 0, 2); // clones
      stats.set(ValueLayout.JAVA_LONG, 8, 77); // creation txg
      stats.set(ValueLayout.JAVA_INT, 24, 3); // DMU_OST_ZVOL
      stats.set(ValueLayout.JAVA_BYTE, 28, (byte) 1);
      byte[] origin = "tank/vol@s1".getBytes(StandardCharsets.UTF_8);
      MemorySegment.copy(origin, 0, stats, ValueLayout.JAVA_BYTE, 31, origin.length);
      assertThat(zc.objsetStats())
          .isEqualTo(new ZfsCommand.ObjsetStats(2, 77, 0, 3, true, false, "tank/vol@s1"));
    }
  }

  @Test
  void refusesANameThatDoesNotFit() {
    try (Arena arena = Arena.ofConfined()) {
      assertThatThrownBy(() -> ZfsCommand.allocate(arena).name("x".repeat(4096)))
          .isInstanceOf(IllegalArgumentException.class);
    }
  }
}
