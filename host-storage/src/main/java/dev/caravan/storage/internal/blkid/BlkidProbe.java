package dev.caravan.storage.internal.blkid;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.bindings.blkid.Blkid;
import dev.caravan.storage.NativeLibraryUnavailableException;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.internal.sys.Fd;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.HashMap;
import java.util.Map;

/** libblkid's low-level probe, reduced to the name/value pairs it finds. */
public final class BlkidProbe {
  /** What a safe probe found: its values, or that signatures contradict each other. */
  public record Result(boolean ambivalent, Map<String, String> values) {
    public Result {
      values = Map.copyOf(values);
    }
  }

  private BlkidProbe() {}

  /**
   * Probes superblocks (filesystems, RAID and LVM members, crypto headers) and partition tables
   * with {@code blkid_do_safeprobe}, reading through {@code fd}, which stays open and ours.
   * Bad-checksum superblocks are reported too: for deciding whether a device is safe to format, a
   * damaged filesystem is still data.
   */
  public static Result probe(Fd fd) {
    requireLibblkid();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment probe = ByDescriptor.newProbe();
      if (probe.equals(MemorySegment.NULL)) {
        throw new StorageException("libblkid cannot allocate a probe for " + fd);
      }
      if (ByDescriptor.setDevice(probe, fd.number()) != 0) {
        Blkid.blkid_free_probe(probe);
        throw new StorageException("libblkid cannot probe " + fd);
      }
      return probeAndFree(arena, probe, fd.toString());
    }
  }

  private static void requireLibblkid() {
    NativeLibraries.Status blkid = NativeLibraries.status(NativeLibraries.Library.BLKID);
    if (!blkid.available()) {
      throw new NativeLibraryUnavailableException(blkid.problem().orElse("libblkid unavailable"));
    }
  }

  private static Result probeAndFree(Arena arena, MemorySegment probe, String device) {
    try {
      Blkid.blkid_probe_enable_superblocks(probe, 1);
      Blkid.blkid_probe_set_superblocks_flags(
          probe,
          Blkid.BLKID_SUBLKS_TYPE()
              | Blkid.BLKID_SUBLKS_UUID()
              | Blkid.BLKID_SUBLKS_LABEL()
              | Blkid.BLKID_SUBLKS_USAGE()
              | Blkid.BLKID_SUBLKS_BADCSUM());
      Blkid.blkid_probe_enable_partitions(probe, 1);
      return switch (Blkid.blkid_do_safeprobe(probe)) {
        case 0 -> new Result(false, values(arena, probe));
        case 1 -> new Result(false, Map.of());
        case -2 -> new Result(true, Map.of());
        default -> throw new StorageException("libblkid failed to probe " + device);
      };
    } finally {
      Blkid.blkid_free_probe(probe);
    }
  }

  private static Map<String, String> values(Arena arena, MemorySegment probe) {
    MemorySegment name = arena.allocate(ADDRESS);
    MemorySegment data = arena.allocate(ADDRESS);
    MemorySegment length = arena.allocate(JAVA_LONG);
    Map<String, String> values = new HashMap<>();
    int count = Blkid.blkid_probe_numof_values(probe);
    for (int i = 0; i < count; i++) {
      if (Blkid.blkid_probe_get_value(probe, i, name, data, length) == 0) {
        values.put(
            name.get(ADDRESS, 0).reinterpret(Long.MAX_VALUE).getString(0),
            data.get(ADDRESS, 0).reinterpret(length.get(JAVA_LONG, 0)).getString(0));
      }
    }
    return values;
  }

  /**
   * The two calls that probe an open descriptor, bound here by hand: the generated bindings (see
   * native/filters/blkid.args) do not include them. Loaded on first use, after libblkid was found.
   */
  private static final class ByDescriptor {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBBLKID =
        SymbolLookup.libraryLookup("libblkid.so.1", Arena.global());
    private static final MethodHandle NEW_PROBE =
        LINKER.downcallHandle(
            LIBBLKID.findOrThrow("blkid_new_probe"), FunctionDescriptor.of(ADDRESS));
    // int blkid_probe_set_device(blkid_probe pr, int fd, blkid_loff_t off, blkid_loff_t size):
    // offset 0 and size 0 mean the whole device. The descriptor stays the caller's to close.
    private static final MethodHandle SET_DEVICE =
        LINKER.downcallHandle(
            LIBBLKID.findOrThrow("blkid_probe_set_device"),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG));

    static MemorySegment newProbe() {
      try {
        return (MemorySegment) NEW_PROBE.invokeExact();
      } catch (RuntimeException | Error e) {
        throw e;
      } catch (Throwable t) {
        throw new AssertionError("a downcall threw a checked exception", t);
      }
    }

    static int setDevice(MemorySegment probe, int fd) {
      try {
        return (int) SET_DEVICE.invokeExact(probe, fd, 0L, 0L);
      } catch (RuntimeException | Error e) {
        throw e;
      } catch (Throwable t) {
        throw new AssertionError("a downcall threw a checked exception", t);
      }
    }
  }
}
