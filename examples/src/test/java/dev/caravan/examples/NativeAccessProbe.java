package dev.caravan.examples;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.storage.fs.FsStats;
import dev.caravan.storage.fs.Filesystems;
import java.nio.file.Path;

/**
 * What {@link ModuleEncapsulationTest} runs in a JVM with host-storage on the module path: one
 * restricted FFM call made by each module (the bindings open libblkid; host-storage binds statvfs
 * itself). Needs no root.
 */
final class NativeAccessProbe {
  private NativeAccessProbe() {}

  public static void main(String[] args) {
    NativeLibraries.Status blkid = NativeLibraries.status(NativeLibraries.Library.BLKID);
    System.out.println("blkid available: " + blkid.available() + " " + blkid.problem().orElse(""));
    FsStats root = Filesystems.stats(Path.of("/"));
    System.out.println("statvfs /: " + root.totalBytes() + " bytes");
  }
}
