package dev.caravan.storage.zfs;

import dev.caravan.bindings.zfs.ZfsCore;
import dev.caravan.storage.NativeLibraryUnavailableException;
import java.lang.foreign.Arena;

/**
 * Run in a child JVM by {@link ZfsUnavailableTest}. With no argument it opens the facade three
 * times on a host without ZFS and prints what happened; with {@code unguarded} it calls {@code
 * lzc_exists} after a failed init, as unguarded code would, which aborts the process.
 */
public final class ZfsOpenProbe {
  private ZfsOpenProbe() {}

  public static void main(String[] args) {
    if (args.length > 0 && args[0].equals("unguarded")) {
      System.out.println("init returned " + ZfsCore.libzfs_core_init());
      System.out.flush();
      try (Arena arena = Arena.ofConfined()) {
        ZfsCore.lzc_exists(arena.allocateFrom("tank"));
      }
      System.out.println("still alive");
      return;
    }
    for (int i = 0; i < 3; i++) {
      try (Zfs zfs = Zfs.open()) {
        System.out.println("opened " + zfs.marker());
      } catch (NativeLibraryUnavailableException e) {
        System.out.println("refused: " + e.getMessage());
      }
    }
    System.out.println("alive");
  }
}
