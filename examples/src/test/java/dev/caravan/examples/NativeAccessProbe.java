package dev.caravan.examples;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.storage.NativeAccessDeniedException;
import dev.caravan.storage.block.BlockDevices;
import dev.caravan.storage.block.DeviceUse;
import dev.caravan.storage.block.LoopDevices;
import dev.caravan.storage.block.Probe;
import dev.caravan.storage.file.AtomicFiles;
import dev.caravan.storage.file.SparseFiles;
import dev.caravan.storage.fs.FsStats;
import dev.caravan.storage.fs.Filesystems;
import dev.caravan.storage.mount.ConfinedMounts;
import dev.caravan.storage.mount.MountFlag;
import dev.caravan.storage.mount.MountTable;
import dev.caravan.storage.mount.Mounts;
import java.lang.reflect.Array;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;

/**
 * What {@link ModuleEncapsulationTest} runs in a JVM that denies native access to what it does not
 * grant it: the steps named in its arguments, by default {@value #BLKID} (the bindings open
 * libblkid) and {@value #STATVFS} (host-storage binds statvfs itself). {@value #MOUNT} names mount
 * flags and asks for a mount that cannot succeed. {@value #API} calls every public static method of
 * the block, file, fs and mount classes that reach native code, with null and zero arguments, and
 * prints how many refused with NativeAccessDeniedException, and each that did not. A refused step is
 * printed as an embedder would report it, and the exit status is then {@value #DENIED}. Needs no
 * root.
 */
final class NativeAccessProbe {
  static final String BLKID = "blkid";
  static final String STATVFS = "statvfs";
  static final String MOUNT = "mount";
  static final String API = "api";
  static final String REFUSED = "refused entry points: ";
  static final String NOT_REFUSED = "not refused: ";
  private static final List<Class<?>> NATIVE_API =
      List.of(
          BlockDevices.class,
          DeviceUse.class,
          LoopDevices.class,
          Probe.class,
          AtomicFiles.class,
          SparseFiles.class,
          Filesystems.class,
          ConfinedMounts.class,
          MountTable.class,
          Mounts.class);
  /** Parsing /proc/self/mountinfo and picking from what was parsed: plain Java. */
  private static final Set<String> PLAIN_JAVA =
      Set.of("MountTable.read", "MountTable.parse", "MountTable.stackedAt");
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
      case API -> callEveryEntryPoint();
      default -> throw new IllegalArgumentException("unknown step " + step);
    }
  }

  private static void callEveryEntryPoint() {
    int refused = 0;
    for (Class<?> c : NATIVE_API) {
      for (Method m : c.getDeclaredMethods()) {
        String name = c.getSimpleName() + "." + m.getName();
        if (!Modifier.isPublic(m.getModifiers())
            || !Modifier.isStatic(m.getModifiers())
            || PLAIN_JAVA.contains(name)) {
          continue;
        }
        Object[] arguments = new Object[m.getParameterCount()];
        for (int i = 0; i < arguments.length; i++) {
          Class<?> type = m.getParameterTypes()[i];
          // A one-element array holds the type's default: 0, false, or null.
          arguments[i] = type.isPrimitive() ? Array.get(Array.newInstance(type, 1), 0) : null;
        }
        try {
          m.invoke(null, arguments);
          System.out.println(NOT_REFUSED + name + " returned");
        } catch (InvocationTargetException e) {
          if (e.getCause() instanceof NativeAccessDeniedException) {
            refused++;
          } else {
            System.out.println(NOT_REFUSED + name + " threw " + e.getCause());
          }
        } catch (IllegalAccessException e) {
          throw new IllegalStateException(name, e);
        }
      }
    }
    System.out.println(REFUSED + refused);
  }
}
