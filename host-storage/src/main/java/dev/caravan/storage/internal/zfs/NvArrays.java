package dev.caravan.storage.internal.zfs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;

/**
 * libnvpair accessors the generated bindings do not include: the array and 32/64-bit value getters
 * a pool configuration needs ({@code vdev_stats} is a uint64 array, {@code children} an nvlist
 * array). Each returns 0 or an errno, like the rest of libnvpair, so no errno capture is needed.
 *
 * <p>Loaded on first use, which only happens after {@link ZfsLibrary#require()} has confirmed that
 * libnvpair is present. (These could move into {@code native/filters/zfs_core.args}.)
 */
final class NvArrays {
  private static final Linker LINKER = Linker.nativeLinker();
  private static final SymbolLookup NVPAIR =
      SymbolLookup.libraryLookup("libnvpair.so.3", Arena.global());

  /** {@code int nvpair_value_uint64_array(nvpair_t *, uint64_t **, uint_t *)}. */
  static final MethodHandle UINT64_ARRAY = handle("nvpair_value_uint64_array", 3);

  /** {@code int nvpair_value_nvlist_array(nvpair_t *, nvlist_t ***, uint_t *)}. */
  static final MethodHandle NVLIST_ARRAY = handle("nvpair_value_nvlist_array", 3);

  /** {@code int nvpair_value_string_array(nvpair_t *, const char ***, uint_t *)}. */
  static final MethodHandle STRING_ARRAY = handle("nvpair_value_string_array", 3);

  /** {@code int nvpair_value_int64(nvpair_t *, int64_t *)}. */
  static final MethodHandle INT64 = handle("nvpair_value_int64", 2);

  /** {@code int nvpair_value_uint32(nvpair_t *, uint32_t *)}. */
  static final MethodHandle UINT32 = handle("nvpair_value_uint32", 2);

  private NvArrays() {}

  private static MethodHandle handle(String name, int pointerArguments) {
    var arguments = new java.lang.foreign.MemoryLayout[pointerArguments];
    java.util.Arrays.fill(arguments, ADDRESS);
    return LINKER.downcallHandle(
        NVPAIR.findOrThrow(name), FunctionDescriptor.of(JAVA_INT, arguments));
  }
}
