package dev.caravan.csi.node;

import java.util.Set;

/** The mount flags a CO may ask for; anything else is rejected before it reaches mount(2). */
public final class MountOptions {
  /** Generic VFS flags plus a few harmless filesystem options. */
  public static final Set<String> ALLOWED =
      Set.of(
          "defaults", "rw", "ro", "nosuid", "nodev", "noexec", "noatime", "nodiratime", "relatime",
          "strictatime", "sync", "dirsync", "lazytime", "discard", "nodiscard");

  /** The subset passed to the filesystem as mount data rather than as VFS flags. */
  public static final Set<String> DATA_OPTIONS = Set.of("discard", "nodiscard");

  private MountOptions() {}
}
