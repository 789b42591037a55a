package dev.caravan.storage.zfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.storage.internal.zfs.NvList;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The Java reader of packed nvlists, against libnvpair's own packing and against broken input. */
class PackedNvListTest {
  @Test
  void readsWhatLibnvpairPacks() {
    assumeTrue(
        NativeLibraries.isAvailable(NativeLibraries.Library.ZFS_CORE),
        () -> "needs libnvpair to pack: "
            + NativeLibraries.status(NativeLibraries.Library.ZFS_CORE).problem().orElse(""));
    Map<String, Object> values = new LinkedHashMap<>();
    values.put("fromguid", 0x8ff8f9fca9c7ba03L);
    values.put("object", 1L);
    values.put("toname", "pool/a/b@s1");
    values.put("largeblockok", true);
    values.put("max", -1L);
    values.put("x", "");
    byte[] packed;
    try (NvList list = NvList.of(values);
        Arena arena = Arena.ofConfined()) {
      packed = list.pack(arena).toArray(ValueLayout.JAVA_BYTE);
    }
    assertThat(PackedNvList.read(packed)).containsExactlyEntriesOf(values);
    byte[] ours =
        new PackedNvListWriter()
            .uint64("fromguid", 0x8ff8f9fca9c7ba03L)
            .uint64("object", 1)
            .string("toname", "pool/a/b@s1")
            .flag("largeblockok")
            .uint64("max", -1)
            .string("x", "")
            .bytes();
    assertThat(ours).as("the test's writer packs as libnvpair does").isEqualTo(packed);
  }

  @Test
  void readsUint64Arrays() {
    byte[] packed = new PackedNvListWriter().uint64Array("redact_snaps", 3, 4, 5).uint64Array("none").bytes();
    Map<String, Object> read = PackedNvList.read(packed);
    assertThat((long[]) read.get("redact_snaps")).containsExactly(3, 4, 5);
    assertThat((long[]) read.get("none")).isEmpty();
  }

  @Test
  void refusesBrokenLists() {
    byte[] good = new PackedNvListWriter().string("toname", "tank/v@s").uint64("object", 1).bytes();
    refused(Arrays.copyOf(good, 12), "is too short");
    refused(Arrays.copyOf(good, good.length - 4), "is truncated");
    refused(Arrays.copyOf(good, good.length + 8), "has 8 bytes after its end");
    byte[] endian = good.clone();
    endian[1] = 7;
    refused(endian, "endianness 7 is unknown");
    byte[] size = good.clone();
    size[12] = 12; // the first pair's size: smaller than a pair header
    refused(size, "pair at byte 12 has size 12");
    byte[] name = good.clone();
    name[12 + 16 + 6] = 'x'; // the first pair's name loses its NUL
    refused(name, "pair at byte 12 has a bad name");
    byte[] string =
        new PackedNvListWriter().pair("s", PackedNvListWriter.STRING, 1, "sixteen-bytes-xx".getBytes(java.nio.charset.StandardCharsets.UTF_8)).bytes();
    refused(string, "string s is not terminated");
    refused(new PackedNvListWriter().pair("n", PackedNvListWriter.UINT64, 2, new byte[16]).bytes(), "has 2 elements, not 1");
    refused(new PackedNvListWriter().pair("a", PackedNvListWriter.UINT64_ARRAY, 5, new byte[16]).bytes(), "array a claims 5 elements");
  }

  private static void refused(byte[] packed, String why) {
    assertThatThrownBy(() -> PackedNvList.read(packed))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageStartingWith("packed nvlist")
        .hasMessageContaining(why);
  }
}
