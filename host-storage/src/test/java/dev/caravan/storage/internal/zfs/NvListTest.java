package dev.caravan.storage.internal.zfs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.bindings.zfs.ZfsCore;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Round trips through the real libnvpair (installed on the host; no kernel module needed). */
class NvListTest {
  @BeforeAll
  static void needsLibnvpair() {
    assumeTrue(
        NativeLibraries.isAvailable(NativeLibraries.Library.ZFS_CORE),
        () -> "needs libzfs_core and libnvpair: "
            + NativeLibraries.status(NativeLibraries.Library.ZFS_CORE).problem().orElse(""));
  }

  @Test
  void packsAndUnpacksScalarsFlagsAndNestedLists() {
    Map<String, Object> nested = new LinkedHashMap<>();
    nested.put("value", 17179869184L);
    nested.put("source", "tank/parent");
    Map<String, Object> values = new LinkedHashMap<>();
    values.put("volsize", 1L << 30);
    values.put("caravan:managed", "true");
    values.put("tank/vol@s1", true);
    values.put("max", -1L); // UINT64_MAX
    values.put("refreservation", nested);

    Map<String, Object> back;
    try (NvList list = NvList.of(values);
        Arena arena = Arena.ofConfined()) {
      MemorySegment packed = list.pack(arena);
      assertThat(packed.byteSize()).isPositive();
      back = NvList.unpack(packed);
      assertThat(list.toMap()).isEqualTo(back);
    }
    assertThat(back).containsExactlyEntriesOf(values);
    assertThat(back.keySet()).containsExactly(values.keySet().toArray(String[]::new));
  }

  @Test
  void addingANameAgainReplacesIt() {
    try (NvList list = NvList.create().add("a", "1").add("a", "2")) {
      assertThat(list.toMap()).containsExactly(Map.entry("a", "2"));
    }
  }

  @Test
  void readsTheArrayAndFixedWidthTypesAPoolConfigUses() {
    MemorySegment list = ZfsCore.fnvlist_alloc();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment child1 = ZfsCore.fnvlist_alloc();
      MemorySegment child2 = ZfsCore.fnvlist_alloc();
      try {
        ZfsCore.fnvlist_add_string(child1, arena.allocateFrom("type"), arena.allocateFrom("file"));
        ZfsCore.fnvlist_add_uint64(child2, arena.allocateFrom("ashift"), 12);
        MemorySegment children = arena.allocate(ADDRESS, 2);
        children.setAtIndex(ADDRESS, 0, child1);
        children.setAtIndex(ADDRESS, 1, child2);
        Native.call(Native.ADD_NVLIST_ARRAY, list, arena.allocateFrom("children"), children, 2);
      } finally {
        ZfsCore.nvlist_free(child1); // the list holds copies
        ZfsCore.nvlist_free(child2);
      }
      MemorySegment stats = arena.allocateFrom(JAVA_LONG, 0, 7, 0, 4096, 1 << 20);
      Native.call(Native.ADD_UINT64_ARRAY, list, arena.allocateFrom("vdev_stats"), stats, 5);
      MemorySegment strings = arena.allocate(ADDRESS, 2);
      strings.setAtIndex(ADDRESS, 0, arena.allocateFrom("a"));
      strings.setAtIndex(ADDRESS, 1, arena.allocateFrom("b"));
      Native.call(Native.ADD_STRING_ARRAY, list, arena.allocateFrom("names"), strings, 2);
      Native.call(Native.ADD_UINT64_ARRAY, list, arena.allocateFrom("empty"), MemorySegment.NULL, 0);
      ZfsCore.fnvlist_add_int32(list, arena.allocateFrom("error"), -5);
      ZfsCore.fnvlist_add_uint32(list, arena.allocateFrom("u32"), 0xFFFF_FFFF);
      ZfsCore.fnvlist_add_int64(list, arena.allocateFrom("i64"), Long.MIN_VALUE);
      ZfsCore.fnvlist_add_boolean_value(list, arena.allocateFrom("flag"), 1);

      Map<String, Object> read = NvList.read(list);
      assertThat(read.get("children"))
          .isEqualTo(List.of(Map.of("type", "file"), Map.of("ashift", 12L)));
      assertThat((long[]) read.get("vdev_stats")).containsExactly(0, 7, 0, 4096, 1 << 20);
      assertThat((long[]) read.get("empty")).isEmpty();
      assertThat(read.get("names")).isEqualTo(List.of("a", "b"));
      assertThat(read.get("error")).isEqualTo(-5L);
      assertThat(read.get("u32")).isEqualTo(0xFFFF_FFFFL);
      assertThat(read.get("i64")).isEqualTo(Long.MIN_VALUE);
      assertThat(read.get("flag")).isEqualTo(true);
    } finally {
      ZfsCore.nvlist_free(list);
    }
  }

  @Test
  void refusesWhatAnNvlistCannotCarry() {
    assertThatThrownBy(() -> NvList.of(Map.of("x", 1.5))).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> NvList.of(Map.of("x", "a\0b")))
        .isInstanceOf(IllegalArgumentException.class);
    NvList list = NvList.create();
    list.close();
    list.close(); // idempotent
    assertThatThrownBy(list::handle).isInstanceOf(IllegalStateException.class);
  }

  /** libnvpair adders the bindings lack, for building test input only. */
  private static final class Native {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup NVPAIR =
        SymbolLookup.libraryLookup("libnvpair.so.3", Arena.global());
    static final MethodHandle ADD_UINT64_ARRAY = adder("nvlist_add_uint64_array");
    static final MethodHandle ADD_NVLIST_ARRAY = adder("nvlist_add_nvlist_array");
    static final MethodHandle ADD_STRING_ARRAY = adder("nvlist_add_string_array");

    private static MethodHandle adder(String name) {
      return LINKER.downcallHandle(
          NVPAIR.findOrThrow(name),
          FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT));
    }

    static void call(
        MethodHandle adder, MemorySegment list, MemorySegment name, MemorySegment array, int n) {
      int error;
      try {
        error = (int) adder.invokeExact(list, name, array, n);
      } catch (Throwable t) {
        throw new AssertionError(t);
      }
      assertThat(error).isZero();
    }
  }
}
