package dev.caravan.storage.internal.zfs;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.caravan.bindings.NativeLibraries;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Map;

/**
 * {@code lzc_load_key} and {@code lzc_unload_key}, the two libzfs_core calls of ZFS native
 * encryption's key handling. These downcall handles are written by hand because no jextract was
 * available to regenerate the bindings with them; their C signatures are those of libzfs_core.h
 * (OpenZFS 0.8 and later):
 *
 * <pre>{@code
 * int lzc_load_key(const char *fsname, boolean_t noop, uint8_t *wkeydata, uint_t wkeylen);
 * int lzc_unload_key(const char *fsname);
 * }</pre>
 *
 * <p>Like {@link Lzc}, only reachable after {@link ZfsLibrary#require()} succeeded. The wrapping key
 * is copied into native memory for the call only, and that memory is zeroed before it is freed.
 */
public final class LzcKeys {
  private LzcKeys() {}

  /** Resolved on first use, after libzfs_core was loaded and initialised. */
  private static final class Handles {
    private static final SymbolLookup LIBRARY = library();
    // boolean_t is an enum: an int in the C ABI.
    static final MethodHandle LOAD_KEY =
        Linker.nativeLinker()
            .downcallHandle(
                LIBRARY.findOrThrow("lzc_load_key"),
                FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT));
    static final MethodHandle UNLOAD_KEY =
        Linker.nativeLinker()
            .downcallHandle(
                LIBRARY.findOrThrow("lzc_unload_key"), FunctionDescriptor.of(JAVA_INT, ADDRESS));

    private static SymbolLookup library() {
      // The same library the generated bindings opened: dlopen counts references, so this adds one.
      return SymbolLookup.libraryLookup(
          NativeLibraries.Library.ZFS_CORE.sonames().getFirst(), Arena.global());
    }
  }

  /**
   * {@code lzc_load_key}: loads {@code wrappingKey} (32 bytes) for the encryption root {@code
   * dataset}; with {@code noop}, only checks it. EACCES: the key is wrong; EEXIST: already loaded.
   */
  public static Lzc.Result loadKey(String dataset, boolean noop, byte[] wrappingKey) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment key = arena.allocate(JAVA_BYTE, wrappingKey.length);
      try {
        MemorySegment.copy(wrappingKey, 0, key, JAVA_BYTE, 0, wrappingKey.length);
        int errno =
            (int) Handles.LOAD_KEY.invokeExact(
                arena.allocateFrom(dataset), noop ? 1 : 0, key, wrappingKey.length);
        return new Lzc.Result(errno, Map.of());
      } catch (RuntimeException | Error e) {
        throw e;
      } catch (Throwable t) {
        throw new IllegalStateException("lzc_load_key", t);
      } finally {
        key.fill((byte) 0);
      }
    }
  }

  /** {@code lzc_unload_key}: EACCES when no key is loaded, EBUSY while the dataset is in use. */
  public static Lzc.Result unloadKey(String dataset) {
    try (Arena arena = Arena.ofConfined()) {
      int errno = (int) Handles.UNLOAD_KEY.invokeExact(arena.allocateFrom(dataset));
      return new Lzc.Result(errno, Map.of());
    } catch (RuntimeException | Error e) {
      throw e;
    } catch (Throwable t) {
      throw new IllegalStateException("lzc_unload_key", t);
    }
  }
}
