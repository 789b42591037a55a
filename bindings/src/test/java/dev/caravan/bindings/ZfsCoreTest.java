package dev.caravan.bindings;

import static dev.caravan.bindings.zfs.ZfsCore.C_POINTER;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.bindings.NativeLibraries.Library;
import dev.caravan.bindings.zfs.ZfsCore;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Exercises libnvpair (pure user space) and libzfs_core_init only.
 *
 * <p>Never call an {@code lzc_*} function here: after libzfs_core_init() fails (no /dev/zfs),
 * libzfs_core asserts on its unopened descriptor and aborts the JVM.
 */
class ZfsCoreTest {

  @BeforeAll
  static void requireLibzfsCore() {
    assumeTrue(
        NativeLibraries.isAvailable(Library.ZFS_CORE),
        () -> NativeLibraries.status(Library.ZFS_CORE).problem().orElse(""));
  }

  @Test
  void initFailsWithAnErrnoWithoutDevZfs() {
    assumeFalse(Files.exists(Path.of("/dev/zfs")), "/dev/zfs exists; ZFS is usable here");
    // open("/dev/zfs") fails: the errno (ENOENT = 2) is returned. Do not call fini afterwards.
    assertThat(ZfsCore.libzfs_core_init()).isPositive();
  }

  @Test
  void enumConstantsMatchTheHeaders() {
    assertThat(ZfsCore.DMU_OST_ZFS()).isEqualTo(2);
    assertThat(ZfsCore.DMU_OST_ZVOL()).isEqualTo(3);
    assertThat(ZfsCore.LZC_DATSET_TYPE_ZFS()).isEqualTo(ZfsCore.DMU_OST_ZFS());
    assertThat(ZfsCore.LZC_DATSET_TYPE_ZVOL()).isEqualTo(ZfsCore.DMU_OST_ZVOL());
    assertThat(ZfsCore.NV_UNIQUE_NAME()).isEqualTo(1);
    assertThat(ZfsCore.NV_ENCODE_NATIVE()).isZero();
    assertThat(ZfsCore.DATA_TYPE_STRING()).isEqualTo(9);
    assertThat(ZfsCore.DATA_TYPE_NVLIST()).isEqualTo(19);
    assertThat(ZfsCore.LZC_SEND_FLAG_RAW()).isEqualTo(1 << 3);
    assertThat(ZfsCore.ZFS_IOC_FIRST()).isEqualTo(0x5a00);
    assertThat(ZfsCore.ZFS_IOC_POOL_CONFIGS()).isEqualTo(0x5a04);
    assertThat(ZfsCore.ZFS_IOC_POOL_STATS()).isEqualTo(0x5a05);
    assertThat(ZfsCore.ZFS_IOC_OBJSET_STATS()).isEqualTo(0x5a12);
    assertThat(ZfsCore.ZFS_IOC_DATASET_LIST_NEXT()).isEqualTo(0x5a14);
    assertThat(ZfsCore.ZFS_IOC_SNAPSHOT_LIST_NEXT()).isEqualTo(0x5a15);
    assertThat(ZfsCore.ZFS_IOC_SET_PROP()).isEqualTo(0x5a16);
  }

  @Test
  void buildsLooksUpIteratesAndRoundTripsAnNvlist() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment nvlp = arena.allocate(C_POINTER);
      assertThat(ZfsCore.nvlist_alloc(nvlp, ZfsCore.NV_UNIQUE_NAME(), 0)).isZero();
      MemorySegment props = nvlp.get(C_POINTER, 0);
      try {
        assertThat(ZfsCore.nvlist_add_uint64(props, arena.allocateFrom("volsize"), 1L << 30))
            .isZero();
        assertThat(
                ZfsCore.nvlist_add_string(
                    props, arena.allocateFrom("compression"), arena.allocateFrom("lz4")))
            .isZero();
        assertThat(ZfsCore.nvlist_add_boolean(props, arena.allocateFrom("caravan:managed")))
            .isZero();
        MemorySegment user = ZfsCore.fnvlist_alloc();
        ZfsCore.fnvlist_add_uint64(user, arena.allocateFrom("generation"), 7);
        ZfsCore.fnvlist_add_nvlist(props, arena.allocateFrom("user"), user); // copies
        ZfsCore.fnvlist_free(user);

        assertThat(ZfsCore.fnvlist_num_pairs(props)).isEqualTo(4);
        assertContents(arena, props);

        MemorySegment sizep = arena.allocate(JAVA_LONG);
        assertThat(ZfsCore.nvlist_size(props, sizep, ZfsCore.NV_ENCODE_NATIVE())).isZero();
        long size = sizep.get(JAVA_LONG, 0);
        assertThat(size).isPositive();
        MemorySegment buf = arena.allocate(size, 8);
        MemorySegment bufp = arena.allocate(C_POINTER);
        bufp.set(C_POINTER, 0, buf);
        assertThat(ZfsCore.nvlist_pack(props, bufp, sizep, ZfsCore.NV_ENCODE_NATIVE(), 0))
            .isZero();

        MemorySegment copyp = arena.allocate(C_POINTER);
        assertThat(ZfsCore.nvlist_unpack(buf, size, copyp, 0)).isZero();
        MemorySegment copy = copyp.get(C_POINTER, 0);
        try {
          assertContents(arena, copy);
        } finally {
          ZfsCore.nvlist_free(copy);
        }
      } finally {
        ZfsCore.nvlist_free(props);
      }
    }
  }

  private static void assertContents(Arena arena, MemorySegment nvl) {
    MemorySegment u64 = arena.allocate(JAVA_LONG);
    assertThat(ZfsCore.nvlist_lookup_uint64(nvl, arena.allocateFrom("volsize"), u64)).isZero();
    assertThat(u64.get(JAVA_LONG, 0)).isEqualTo(1L << 30);

    MemorySegment str = arena.allocate(C_POINTER);
    assertThat(ZfsCore.nvlist_lookup_string(nvl, arena.allocateFrom("compression"), str))
        .isZero();
    assertThat(str.get(C_POINTER, 0).getString(0)).isEqualTo("lz4");

    assertThat(ZfsCore.nvlist_exists(nvl, arena.allocateFrom("caravan:managed")))
        .isEqualTo(ZfsCore.B_TRUE());
    assertThat(ZfsCore.nvlist_exists(nvl, arena.allocateFrom("absent"))).isEqualTo(ZfsCore.B_FALSE());
    // ENOENT for a missing name.
    assertThat(ZfsCore.nvlist_lookup_uint64(nvl, arena.allocateFrom("absent"), u64)).isEqualTo(2);

    MemorySegment inner = ZfsCore.fnvlist_lookup_nvlist(nvl, arena.allocateFrom("user"));
    assertThat(ZfsCore.fnvlist_lookup_uint64(inner, arena.allocateFrom("generation"))).isEqualTo(7);

    Map<String, Integer> types = new LinkedHashMap<>();
    for (MemorySegment pair = ZfsCore.nvlist_next_nvpair(nvl, MemorySegment.NULL);
        !pair.equals(MemorySegment.NULL);
        pair = ZfsCore.nvlist_next_nvpair(nvl, pair)) {
      types.put(ZfsCore.nvpair_name(pair).getString(0), ZfsCore.nvpair_type(pair));
    }
    assertThat(types)
        .containsExactly(
            Map.entry("volsize", ZfsCore.DATA_TYPE_UINT64()),
            Map.entry("compression", ZfsCore.DATA_TYPE_STRING()),
            Map.entry("caravan:managed", ZfsCore.DATA_TYPE_BOOLEAN()),
            Map.entry("user", ZfsCore.DATA_TYPE_NVLIST()));
  }
}
