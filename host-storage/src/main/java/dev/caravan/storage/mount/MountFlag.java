package dev.caravan.storage.mount;

import dev.caravan.bindings.linux.LinuxUapi;
import java.util.Optional;
import java.util.Set;

/**
 * The per-mount flags of mount(2), named after their mount(8) options. A flag's bit is read from the
 * bindings only when a mount is made: naming a flag touches no native code, so a JVM that denies
 * native access fails at the mount call, with a message naming the flag to add.
 */
public enum MountFlag {
  READ_ONLY("ro"),
  NO_SUID("nosuid"),
  NO_DEV("nodev"),
  NO_EXEC("noexec"),
  NO_ATIME("noatime"),
  NO_DIRATIME("nodiratime"),
  RELATIME("relatime"),
  STRICTATIME("strictatime"),
  SYNCHRONOUS("sync"),
  DIRSYNC("dirsync"),
  LAZYTIME("lazytime");

  private final String option;

  MountFlag(String option) {
    this.option = option;
  }

  /** The mount(8) option, as it appears in the mount table: {@code "ro"}, {@code "nosuid"}. */
  public String option() {
    return option;
  }

  public static Optional<MountFlag> fromOption(String option) {
    for (MountFlag flag : values()) {
      if (flag.option.equals(option)) {
        return Optional.of(flag);
      }
    }
    return Optional.empty();
  }

  static long bits(Set<MountFlag> flags) {
    long bits = 0;
    for (MountFlag flag : flags) {
      bits |= flag.bit();
    }
    return bits;
  }

  private long bit() {
    return switch (this) {
      case READ_ONLY -> LinuxUapi.MS_RDONLY();
      case NO_SUID -> LinuxUapi.MS_NOSUID();
      case NO_DEV -> LinuxUapi.MS_NODEV();
      case NO_EXEC -> LinuxUapi.MS_NOEXEC();
      case NO_ATIME -> LinuxUapi.MS_NOATIME();
      case NO_DIRATIME -> LinuxUapi.MS_NODIRATIME();
      case RELATIME -> LinuxUapi.MS_RELATIME();
      case STRICTATIME -> LinuxUapi.MS_STRICTATIME();
      case SYNCHRONOUS -> LinuxUapi.MS_SYNCHRONOUS();
      case DIRSYNC -> LinuxUapi.MS_DIRSYNC();
      case LAZYTIME -> LinuxUapi.MS_LAZYTIME();
    };
  }
}
