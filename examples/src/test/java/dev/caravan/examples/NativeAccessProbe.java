package dev.caravan.examples;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.storage.NativeAccessDeniedException;
import dev.caravan.storage.fs.FsStats;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.mount.MountFlag;
import dev.caravan.storage.mount.Mounts;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;

/**
 * What {@link ModuleEncapsulationTest} runs in a JVM that denies native access to what it does not
 * grant it: the steps named in its arguments, by default {@value #BLKID} (the bindings open
 * libblkid) and {@value #STATVFS} (host-storage binds statvfs itself). {@value #MOUNT} names mount
 * flags and asks for a mount that cannot succeed. A refused step is printed as an embedder would
 * report it, and the exit status is then {@value #DENIED}. Needs no root.
 */
final class NativeAccessProbe {
  static final String BLKID = "blkid";
  static final String STATVFS = "statvfs";
  static final String MOUNT = "mount";
  static final int DENIED = 3;

  private NativeAccessProbe() {}

  public static void main(String[] args) {
    List<String> steps = args.length == 0 ? List.of(BLKID, STATVFS) : List.of(args);
    boolean denied = false;
    for (String step : steps) {
      try {
        run(step);
      } catch (NativeAccessDeniedException e) {
        System.out.println("denied " + step + ": " + e.getClass().getName() + ": " + e.getMessage());
        denied = true;
      }
    }
    if (denied) {
      System.exit(DENIED);
    }
  }

  private static void run(String step) {
    switch (step) {
      case BLKID -> {
        NativeLibraries.Status blkid = NativeLibraries.status(NativeLibraries.Library.BLKID);
        System.out.println("blkid available: " + blkid.available() + " " + blkid.problem().orElse(""));
      }
      case STATVFS -> {
        FsStats root = Filesystems.stats(Path.of("/"));
        System.out.println("statvfs /: " + root.totalBytes() + " bytes");
      }
      case MOUNT -> {
        EnumSet<MountFlag> flags = EnumSet.of(MountFlag.NO_SUID, MountFlag.READ_ONLY);
        Mounts.mount(Path.of("/nonexistent-device"), Path.of("/nonexistent-mount-point"), "ext4", flags, null);
      }
      default -> throw new IllegalArgumentException("unknown step " + step);
    }
  }
}
