package dev.caravan.storage.internal.zfs;

import static dev.caravan.bindings.zfs.ZfsCore.C_POINTER;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.caravan.bindings.zfs.ZfsCore;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A native {@code nvlist_t} we allocated, to pass to libzfs_core or to pack for an ioctl. Always
 * used in try-with-resources: {@link #close()} frees it.
 *
 * <p>Nvlists coming back from ZFS are never handed around natively: {@link #read(MemorySegment)}
 * and {@link #unpack(MemorySegment)} copy them at once into plain Java values, and the native
 * list is freed by whoever allocated it. The Java shape of a pair's value:
 *
 * <ul>
 *   <li>every integer type: {@link Long} (uint64 values above 2^63 wrap, as in Java generally);
 *   <li>string: {@link String}; {@code boolean_value}: {@link Boolean}; a bare {@code boolean}
 *       (a flag whose presence is the value, used as set members): {@link Boolean#TRUE};
 *   <li>nvlist: an unmodifiable {@code Map<String, Object>} in the list's order;
 *   <li>uint64 array: {@code long[]}; nvlist array: {@code List<Map<String, Object>>}; string
 *       array: {@code List<String>}.
 * </ul>
 *
 * Other types (byte arrays, doubles, hrtime...) do not occur in what Caravan reads and are skipped.
 */
public final class NvList implements AutoCloseable {
  private static final int NV_UNIQUE_NAME = 1;
  private static final int NV_ENCODE_NATIVE = 0;

  private MemorySegment handle;

  private NvList(MemorySegment handle) {
    this.handle = handle;
  }

  /** An empty list whose names are unique (adding a name again replaces its value). */
  public static NvList create() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(C_POINTER);
      check(ZfsCore.nvlist_alloc(out, NV_UNIQUE_NAME, 0), "nvlist_alloc");
      return new NvList(out.get(C_POINTER, 0));
    }
  }

  /**
   * A list holding {@code values}: {@link String}, {@link Long} or {@link Integer} (as uint64),
   * {@link Boolean#TRUE} (a bare boolean flag) and nested {@code Map}s.
   */
  public static NvList of(Map<String, ?> values) {
    NvList list = create();
    try {
      for (Map.Entry<String, ?> entry : values.entrySet()) {
        list.put(entry.getKey(), entry.getValue());
      }
      return list;
    } catch (RuntimeException e) {
      list.close();
      throw e;
    }
  }

  private void put(String name, Object value) {
    switch (value) {
      case String s -> add(name, s);
      case Long l -> add(name, l.longValue());
      case Integer i -> add(name, i.longValue());
      case Boolean b when b -> addFlag(name);
      case Map<?, ?> map -> {
        Map<String, Object> nested = new LinkedHashMap<>();
        map.forEach((k, v) -> nested.put((String) k, v));
        try (NvList child = of(nested)) {
          add(name, child);
        }
      }
      default ->
          throw new IllegalArgumentException(
              "cannot put " + value.getClass().getSimpleName() + " into an nvlist: " + name);
    }
  }

  public NvList add(String name, String value) {
    try (Arena arena = Arena.ofConfined()) {
      check(
          ZfsCore.nvlist_add_string(handle(), cString(arena, name), cString(arena, value)),
          "nvlist_add_string " + name);
    }
    return this;
  }

  public NvList add(String name, long value) {
    try (Arena arena = Arena.ofConfined()) {
      check(
          ZfsCore.nvlist_add_uint64(handle(), cString(arena, name), value),
          "nvlist_add_uint64 " + name);
    }
    return this;
  }

  /** A bare boolean: the name's presence is the value (how ZFS passes sets of names). */
  public NvList addFlag(String name) {
    try (Arena arena = Arena.ofConfined()) {
      check(ZfsCore.nvlist_add_boolean(handle(), cString(arena, name)), "nvlist_add_boolean " + name);
    }
    return this;
  }

  /** Adds a copy of {@code value}; the caller still owns (and frees) {@code value}. */
  public NvList add(String name, NvList value) {
    try (Arena arena = Arena.ofConfined()) {
      check(
          ZfsCore.nvlist_add_nvlist(handle(), cString(arena, name), value.handle()),
          "nvlist_add_nvlist " + name);
    }
    return this;
  }

  /** The native {@code nvlist_t *}, valid until {@link #close()}. */
  public MemorySegment handle() {
    if (handle == null) {
      throw new IllegalStateException("nvlist already freed");
    }
    return handle;
  }

  /** Packs this list (native encoding, as ioctls expect) into memory owned by {@code arena}. */
  public MemorySegment pack(Arena arena) {
    MemorySegment size = arena.allocate(JAVA_LONG);
    check(ZfsCore.nvlist_size(handle(), size, NV_ENCODE_NATIVE), "nvlist_size");
    long length = size.get(JAVA_LONG, 0);
    MemorySegment buffer = arena.allocate(length, 8);
    MemorySegment bufferPointer = arena.allocateFrom(C_POINTER, buffer);
    check(
        ZfsCore.nvlist_pack(handle(), bufferPointer, size, NV_ENCODE_NATIVE, 0), "nvlist_pack");
    return buffer.asSlice(0, size.get(JAVA_LONG, 0));
  }

  /** This list as Java values (see the class comment). */
  public Map<String, Object> toMap() {
    return read(handle());
  }

  @Override
  public void close() {
    if (handle != null) {
      ZfsCore.nvlist_free(handle);
      handle = null;
    }
  }

  /**
   * Unpacks the packed nvlist that fills {@code packed} into Java values; the temporary native list
   * is freed. libnvpair reads exactly {@code packed.byteSize()} bytes.
   */
  public static Map<String, Object> unpack(MemorySegment packed) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(C_POINTER);
      check(ZfsCore.nvlist_unpack(packed, packed.byteSize(), out, 0), "nvlist_unpack");
      MemorySegment list = out.get(C_POINTER, 0);
      try {
        return read(list);
      } finally {
        ZfsCore.nvlist_free(list);
      }
    }
  }

  /** Copies the native list at {@code list} into Java values. Does not free it. */
  public static Map<String, Object> read(MemorySegment list) {
    Map<String, Object> values = new LinkedHashMap<>();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment out = arena.allocate(JAVA_LONG);
      MemorySegment count = arena.allocate(JAVA_INT);
      for (MemorySegment pair = ZfsCore.nvlist_next_nvpair(list, MemorySegment.NULL);
          !isNull(pair);
          pair = ZfsCore.nvlist_next_nvpair(list, pair)) {
        String name = ZfsCore.nvpair_name(pair).getString(0);
        Object value = value(pair, out, count);
        if (value != null) {
          values.put(name, value);
        }
      }
    }
    return Collections.unmodifiableMap(values);
  }

  private static Object value(MemorySegment pair, MemorySegment out, MemorySegment count) {
    int type = ZfsCore.nvpair_type(pair);
    if (type == ZfsCore.DATA_TYPE_BOOLEAN()) {
      return true; // a bare name: present means true
    } else if (type == ZfsCore.DATA_TYPE_BOOLEAN_VALUE()) {
      check(ZfsCore.nvpair_value_boolean_value(pair, out), "nvpair_value_boolean_value");
      return out.get(JAVA_INT, 0) != 0;
    } else if (type == ZfsCore.DATA_TYPE_INT32()) {
      check(ZfsCore.nvpair_value_int32(pair, out), "nvpair_value_int32");
      return (long) out.get(JAVA_INT, 0);
    } else if (type == ZfsCore.DATA_TYPE_UINT32()) {
      check(ZfsCore.nvpair_value_uint32(pair, out), "nvpair_value_uint32");
      return Integer.toUnsignedLong(out.get(JAVA_INT, 0));
    } else if (type == ZfsCore.DATA_TYPE_INT64()) {
      check(ZfsCore.nvpair_value_int64(pair, out), "nvpair_value_int64");
      return out.get(JAVA_LONG, 0);
    } else if (type == ZfsCore.DATA_TYPE_UINT64()) {
      check(ZfsCore.nvpair_value_uint64(pair, out), "nvpair_value_uint64");
      return out.get(JAVA_LONG, 0);
    } else if (type == ZfsCore.DATA_TYPE_STRING()) {
      check(ZfsCore.nvpair_value_string(pair, out), "nvpair_value_string");
      return out.get(C_POINTER, 0).getString(0);
    } else if (type == ZfsCore.DATA_TYPE_NVLIST()) {
      check(ZfsCore.nvpair_value_nvlist(pair, out), "nvpair_value_nvlist");
      return read(out.get(C_POINTER, 0));
    } else if (type == ZfsCore.DATA_TYPE_UINT64_ARRAY()) {
      check(ZfsCore.nvpair_value_uint64_array(pair, out, count), "nvpair_value_uint64_array");
      int n = count.get(JAVA_INT, 0);
      return n == 0
          ? new long[0]
          : out.get(C_POINTER, 0).asSlice(0, 8L * n).toArray(JAVA_LONG);
    } else if (type == ZfsCore.DATA_TYPE_NVLIST_ARRAY()) {
      check(ZfsCore.nvpair_value_nvlist_array(pair, out, count), "nvpair_value_nvlist_array");
      int n = count.get(JAVA_INT, 0);
      List<Map<String, Object>> lists = new ArrayList<>(n);
      MemorySegment array = n == 0 ? MemorySegment.NULL : out.get(C_POINTER, 0);
      for (int i = 0; i < n; i++) {
        lists.add(read(array.getAtIndex(C_POINTER, i)));
      }
      return List.copyOf(lists);
    } else if (type == ZfsCore.DATA_TYPE_STRING_ARRAY()) {
      check(ZfsCore.nvpair_value_string_array(pair, out, count), "nvpair_value_string_array");
      int n = count.get(JAVA_INT, 0);
      List<String> strings = new ArrayList<>(n);
      MemorySegment array = n == 0 ? MemorySegment.NULL : out.get(C_POINTER, 0);
      for (int i = 0; i < n; i++) {
        strings.add(array.getAtIndex(C_POINTER, i).getString(0));
      }
      return List.copyOf(strings);
    }
    return null;
  }

  static boolean isNull(MemorySegment pointer) {
    return pointer == null || pointer.address() == 0;
  }

  private static MemorySegment cString(Arena arena, String value) {
    if (value.indexOf('\0') >= 0) {
      throw new IllegalArgumentException("a NUL character cannot pass into ZFS: " + value);
    }
    return arena.allocateFrom(value);
  }

  private static void check(int errno, String operation) {
    if (errno != 0) {
      throw new IllegalStateException(operation + " failed: " + ZfsErrors.name(errno));
    }
  }
}
