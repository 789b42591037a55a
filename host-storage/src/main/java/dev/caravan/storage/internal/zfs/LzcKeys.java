package dev.caravan.storage.internal.zfs;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import dev.caravan.bindings.zfs.ZfsCore;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;

/**
 * {@code lzc_load_key}, {@code lzc_unload_key} and {@code lzc_change_key}, the libzfs_core calls
 * of ZFS native encryption's key handling, through the generated bindings.
 *
 * <p>Like {@link Lzc}, only reachable after {@link ZfsLibrary#require()} succeeded. The wrapping key
 * is copied into native memory for the call only, and that memory is zeroed before it is freed.
 */
public final class LzcKeys {
  // enum dcp_cmd (sys/dsl_crypt.h, not in libzfs_core's headers): none, raw_recv, new_key, ...
  private static final long DCP_CMD_NEW_KEY = 2;

  private LzcKeys() {}

  /**
   * {@code lzc_load_key}: loads {@code wrappingKey} (32 bytes) for the encryption root {@code
   * dataset}; with {@code noop}, only checks it. EACCES: the key is wrong; EEXIST: already loaded.
   */
  public static Lzc.Result loadKey(String dataset, boolean noop, byte[] wrappingKey) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment key = arena.allocate(JAVA_BYTE, wrappingKey.length);
      try {
        MemorySegment.copy(wrappingKey, 0, key, JAVA_BYTE, 0, wrappingKey.length);
        // boolean_t is an enum: an int in the C ABI.
        int errno = ZfsCore.lzc_load_key(arena.allocateFrom(dataset), noop ? 1 : 0, key, wrappingKey.length);
        return new Lzc.Result(errno, Map.of());
      } finally {
        key.fill((byte) 0);
      }
    }
  }

  /**
   * {@code lzc_change_key} with {@code DCP_CMD_NEW_KEY}: wraps the encryption root {@code dataset}'s
   * master key with {@code wrappingKey} (32 bytes) instead of the loaded one, and sets the key
   * properties in {@code properties}. EACCES: its key is not loaded.
   */
  public static Lzc.Result changeKey(String dataset, NvList properties, byte[] wrappingKey) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment key = arena.allocate(JAVA_BYTE, wrappingKey.length);
      try {
        MemorySegment.copy(wrappingKey, 0, key, JAVA_BYTE, 0, wrappingKey.length);
        int errno =
            ZfsCore.lzc_change_key(
                arena.allocateFrom(dataset),
                DCP_CMD_NEW_KEY,
                properties.handle(),
                key,
                wrappingKey.length);
        return new Lzc.Result(errno, Map.of());
      } finally {
        key.fill((byte) 0);
      }
    }
  }

  /** {@code lzc_unload_key}: EACCES when no key is loaded, EBUSY while the dataset is in use. */
  public static Lzc.Result unloadKey(String dataset) {
    try (Arena arena = Arena.ofConfined()) {
      return new Lzc.Result(ZfsCore.lzc_unload_key(arena.allocateFrom(dataset)), Map.of());
    }
  }
}
