package dev.caravan.storage.internal.fs;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.StorageException;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Libc;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * Reads how many bytes an ext4 or xfs filesystem spans straight from its on-disk superblock. Asking
 * this before every stage is what lets a grow be skipped when there is nothing to grow: a read of
 * one block, where starting resize2fs or xfs_growfs costs a process.
 */
public final class Superblocks {
  private static final int EXT4_OFFSET = 1024;
  private static final int EXT4_MAGIC = 0xEF53;
  private static final int EXT4_INCOMPAT_64BIT = 0x80;
  private static final int XFS_MAGIC = 0x58465342; // "XFSB"

  private static final ValueLayout.OfShort LE_SHORT =
      ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfInt LE_INT =
      ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
  private static final ValueLayout.OfInt BE_INT =
      ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
  private static final ValueLayout.OfLong BE_LONG =
      ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

  private Superblocks() {}

  /** How many bytes the ext4 filesystem on {@code device} spans. */
  public static long ext4Size(Path device) {
    try (Arena arena = Arena.ofConfined();
        Fd fd = Libc.open(device, LinuxUapi.O_RDONLY())) {
      return ext4(device, read(fd, arena, EXT4_OFFSET, 1024));
    }
  }

  /** How many bytes the xfs filesystem on {@code device} spans. */
  public static long xfsSize(Path device) {
    try (Arena arena = Arena.ofConfined();
        Fd fd = Libc.open(device, LinuxUapi.O_RDONLY())) {
      return xfs(device, read(fd, arena, 0, 512));
    }
  }


  // Field offsets from the ext4 disk layout: s_blocks_count_lo @0x04, s_log_block_size @0x18,
  // s_magic @0x38, s_feature_incompat @0x60, s_blocks_count_hi @0x150 (only with the 64bit feature).
  private static long ext4(Path device, MemorySegment sb) {
    if (Short.toUnsignedInt(sb.get(LE_SHORT, 0x38)) != EXT4_MAGIC) {
      throw new StorageException(device + " holds no ext4 superblock");
    }
    long blocks = Integer.toUnsignedLong(sb.get(LE_INT, 0x04));
    if ((sb.get(LE_INT, 0x60) & EXT4_INCOMPAT_64BIT) != 0) {
      blocks |= Integer.toUnsignedLong(sb.get(LE_INT, 0x150)) << 32;
    }
    long blockSize = 1024L << sb.get(LE_INT, 0x18);
    return blocks * blockSize;
  }

  // The xfs superblock is big-endian: sb_magicnum @0, sb_blocksize @4, sb_dblocks @8.
  private static long xfs(Path device, MemorySegment sb) {
    if (sb.get(BE_INT, 0) != XFS_MAGIC) {
      throw new StorageException(device + " holds no xfs superblock");
    }
    return sb.get(BE_LONG, 8) * Integer.toUnsignedLong(sb.get(BE_INT, 4));
  }

  private static MemorySegment read(Fd fd, Arena arena, long offset, int length) {
    MemorySegment buffer = arena.allocate(length);
    long got = Libc.pread(fd, buffer, offset);
    if (got != length) {
      throw new StorageException(
          fd + ": short read of the superblock (" + got + " of " + length + " bytes)");
    }
    return buffer;
  }
}
