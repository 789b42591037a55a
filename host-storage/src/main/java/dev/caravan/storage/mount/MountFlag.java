package dev.caravan.storage.mount;

import dev.caravan.bindings.linux.LinuxUapi;
import java.util.Optional;
import java.util.Set;

/** The per-mount flags of mount(2), named after their mount(8) options. */
public enum MountFlag {
  READ_ONLY("ro", LinuxUapi.MS_RDONLY()),
  NO_SUID("nosuid", LinuxUapi.MS_NOSUID()),
  NO_DEV("nodev", LinuxUapi.MS_NODEV()),
  NO_EXEC("noexec", LinuxUapi.MS_NOEXEC()),
  NO_ATIME("noatime", LinuxUapi.MS_NOATIME()),
  NO_DIRATIME("nodiratime", LinuxUapi.MS_NODIRATIME()),
  RELATIME("relatime", LinuxUapi.MS_RELATIME()),
  STRICTATIME("strictatime", LinuxUapi.MS_STRICTATIME()),
  SYNCHRONOUS("sync", LinuxUapi.MS_SYNCHRONOUS()),
  DIRSYNC("dirsync", LinuxUapi.MS_DIRSYNC()),
  LAZYTIME("lazytime", LinuxUapi.MS_LAZYTIME());

  private final String option;
  private final long bit;

  MountFlag(String option, long bit) {
    this.option = option;
    this.bit = bit;
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
      bits |= flag.bit;
    }
    return bits;
  }
}
