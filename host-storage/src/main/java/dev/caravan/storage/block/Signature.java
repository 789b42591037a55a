package dev.caravan.storage.block;

import java.util.Optional;

/**
 * What a device holds at its start, as far as libblkid can tell. {@code type} is libblkid's name:
 * {@code "ext4"}, {@code "xfs"}, {@code "LVM2_member"}, {@code "crypto_LUKS"}, or for a partition
 * table {@code "dos"} or {@code "gpt"}.
 */
public record Signature(
    Optional<String> type, Optional<String> uuid, Optional<String> label, Kind kind) {
  public enum Kind {
    NONE,
    FILESYSTEM,
    PARTITION_TABLE,
    RAID_MEMBER,
    CRYPTO,
    OTHER
  }

  /** Nothing recognisable: the only state in which a device may be formatted. */
  public boolean isEmpty() {
    return kind == Kind.NONE;
  }

  /**
   * For messages: {@code "xfs filesystem"}, {@code "dos partition table"}, {@code "LVM2_member"}.
   */
  public String describe() {
    String name = type.orElse("unidentified or conflicting signatures");
    return switch (kind) {
      case NONE -> "no signature";
      case FILESYSTEM -> name + " filesystem";
      case PARTITION_TABLE -> name + " partition table";
      case RAID_MEMBER, CRYPTO, OTHER -> name;
    };
  }
}
