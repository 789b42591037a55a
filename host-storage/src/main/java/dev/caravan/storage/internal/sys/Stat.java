package dev.caravan.storage.internal.sys;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.invoke.VarHandle;

/**
 * The fields of {@code struct stat} that host-storage uses. The layout is x86_64 glibc's, by hand:
 * the generated bindings do not cover it.
 */
public record Stat(long dev, long inode, int mode, long rdev, long size, long blocks) {
  private static final int S_IFMT = 0170000;
  private static final int S_IFBLK = 0060000;

  static final StructLayout LAYOUT =
      MemoryLayout.structLayout(
          JAVA_LONG.withName("st_dev"),
          JAVA_LONG.withName("st_ino"),
          JAVA_LONG.withName("st_nlink"),
          JAVA_INT.withName("st_mode"),
          JAVA_INT.withName("st_uid"),
          JAVA_INT.withName("st_gid"),
          MemoryLayout.paddingLayout(4),
          JAVA_LONG.withName("st_rdev"),
          JAVA_LONG.withName("st_size"),
          JAVA_LONG.withName("st_blksize"),
          JAVA_LONG.withName("st_blocks"),
          MemoryLayout.sequenceLayout(6, JAVA_LONG).withName("st_atim_mtim_ctim"),
          MemoryLayout.sequenceLayout(3, JAVA_LONG).withName("__glibc_reserved"));

  private static final VarHandle DEV = field("st_dev");
  private static final VarHandle INO = field("st_ino");
  private static final VarHandle MODE = field("st_mode");
  private static final VarHandle RDEV = field("st_rdev");
  private static final VarHandle SIZE = field("st_size");
  private static final VarHandle BLOCKS = field("st_blocks");

  static Stat read(MemorySegment stat) {
    return new Stat(
        (long) DEV.get(stat, 0L),
        (long) INO.get(stat, 0L),
        (int) MODE.get(stat, 0L),
        (long) RDEV.get(stat, 0L),
        (long) SIZE.get(stat, 0L),
        (long) BLOCKS.get(stat, 0L));
  }

  public boolean isBlockDevice() {
    return (mode & S_IFMT) == S_IFBLK;
  }

  public boolean isSymlink() {
    return (mode & S_IFMT) == 0120000;
  }

  public boolean isRegularFile() {
    return (mode & S_IFMT) == 0100000;
  }

  public boolean isDirectory() {
    return (mode & S_IFMT) == 0040000;
  }

  /**
   * The device a device node stands for, as {@code "major:minor"} (the form mountinfo uses), by
   * glibc's gnu_dev_major and gnu_dev_minor.
   */
  public String rdevMajorMinor() {
    long major = ((rdev >>> 8) & 0xfff) | ((rdev >>> 32) & ~0xfffL);
    long minor = (rdev & 0xff) | ((rdev >>> 12) & ~0xffL);
    return major + ":" + minor;
  }

  /** Bytes actually allocated on disk: {@code st_blocks} counts 512-byte units whatever the fs. */
  public long allocatedBytes() {
    return blocks * 512;
  }

  private static VarHandle field(String name) {
    return LAYOUT.varHandle(groupElement(name));
  }
}
