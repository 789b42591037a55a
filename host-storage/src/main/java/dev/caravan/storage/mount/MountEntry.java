package dev.caravan.storage.mount;

import java.nio.file.Path;
import java.util.List;

/**
 * One line of /proc/self/mountinfo, with escapes decoded. {@code root} is the path inside the
 * filesystem that is mounted at {@code mountPoint}: {@code "/"} for a whole filesystem, the source
 * directory's path within its filesystem for a bind mount.
 */
public record MountEntry(
    int id,
    int parentId,
    String majorMinor,
    String root,
    Path mountPoint,
    String mountOptions,
    List<String> optionalFields,
    String fsType,
    String source,
    String superOptions) {
  public MountEntry {
    optionalFields = List.copyOf(optionalFields);
  }

  /** Read-only either for this mount or for the whole filesystem (its superblock). */
  public boolean readOnly() {
    return hasOption(mountOptions, "ro") || hasOption(superOptions, "ro");
  }

  private static boolean hasOption(String options, String option) {
    for (String candidate : options.split(",", -1)) {
      if (candidate.equals(option)) {
        return true;
      }
    }
    return false;
  }
}
