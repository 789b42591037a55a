package dev.caravan.storage.fs;

import java.util.Optional;

/** The filesystems Caravan formats, grows and mounts. */
public enum FsType {
  EXT4("ext4"),
  XFS("xfs");

  private final String id;

  FsType(String id) {
    this.id = id;
  }

  /** The kernel's and libblkid's name for it: {@code "ext4"}, {@code "xfs"}. */
  public String id() {
    return id;
  }

  public static Optional<FsType> parse(String id) {
    for (FsType type : values()) {
      if (type.id.equals(id)) {
        return Optional.of(type);
      }
    }
    return Optional.empty();
  }
}
