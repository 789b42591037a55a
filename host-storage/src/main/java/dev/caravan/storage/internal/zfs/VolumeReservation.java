package dev.caravan.storage.internal.zfs;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The {@code refreservation} that makes a zvol thick: enough pool space for every block of the
 * volume plus its indirect blocks, the same figure {@code zfs create -V} reserves (libzfs's
 * {@code zvol_volsize_to_reservation}, OpenZFS 2.3), so volumes created by Caravan and by the CLI
 * look alike.
 *
 * <p>The rule, restated:
 *
 * <ol>
 *   <li>Data: {@code volsize / volblocksize} blocks. On a plain or mirrored pool they cost their
 *       size. On RAIDZ and dRAID, a small block costs more than its share of parity and padding
 *       than the 128 KiB block that the pool's space accounting assumes, so the data size is scaled
 *       by (allocated size of one volblocksize block) / (allocated size of one 128 KiB block), using
 *       the least efficient top-level vdev.
 *   <li>Metadata: 7 blocks for the dnode levels, plus the indirect blocks of a tree with 1024 block
 *       pointers per 128 KiB indirect block, each counted as a full 128 KiB block and stored {@code
 *       min(copies + 1, 3)} times (ZFS keeps an extra copy of metadata).
 *   <li>Data is multiplied by {@code copies}.
 * </ol>
 *
 * Like the CLI this is deliberately a little generous (metadata usually compresses).
 */
public final class VolumeReservation {
  private static final long SECTOR_SHIFT = 9; // SPA_MINBLOCKSHIFT
  private static final long REFERENCE_BLOCK = 128 * 1024; // SPA_OLD_MAXBLOCKSIZE
  private static final long INDIRECT_BLOCK = 128 * 1024; // 1 << DN_MAX_INDBLKSHIFT
  private static final long POINTERS_PER_INDIRECT = 1024; // 128 KiB / 128-byte block pointer
  private static final long DNODE_LEVELS = 7;
  private static final long MAX_METADATA_COPIES = 3; // SPA_DVAS_PER_BP

  /**
   * A top-level vdev, as far as space accounting cares.
   *
   * @param type {@code "raidz"}, {@code "draid"}, {@code "mirror"}, {@code "disk"}, {@code "file"}
   * @param parity parity devices per group (1 for raidz1, likewise for dRAID), else 0
   * @param ashift log2 of the sector size
   * @param children number of child devices (RAIDZ width)
   * @param draidData data devices per dRAID redundancy group
   */
  public record Vdev(String type, long parity, long ashift, int children, long draidData) {}

  private VolumeReservation() {}

  /** The reservation, in bytes, for a volume of {@code volsize} bytes. */
  public static long of(long volsize, long volblocksize, int copies, List<Vdev> topLevelVdevs) {
    if (volsize <= 0 || volblocksize <= 0 || copies < 1) {
      throw new IllegalArgumentException(
          "volsize " + volsize + ", volblocksize " + volblocksize + ", copies " + copies);
    }
    long blocks = volsize / volblocksize;
    long data = dataSize(blocks, volblocksize, topLevelVdevs);

    long metadataBlocks = DNODE_LEVELS;
    for (long level = blocks; level > 1; ) {
      level = (level + POINTERS_PER_INDIRECT - 1) / POINTERS_PER_INDIRECT;
      metadataBlocks += level;
    }
    metadataBlocks *= Math.min(MAX_METADATA_COPIES, copies + 1L);
    return saturatingAdd(
        saturatingMultiply(data, copies), saturatingMultiply(metadataBlocks, INDIRECT_BLOCK));
  }

  /** The top-level vdevs of a pool config nvlist ({@code vdev_tree.children}). */
  @SuppressWarnings("unchecked")
  public static List<Vdev> topLevelVdevs(Map<String, Object> poolConfig) {
    List<Vdev> vdevs = new ArrayList<>();
    if (poolConfig.get("vdev_tree") instanceof Map<?, ?> tree
        && tree.get("children") instanceof List<?> children) {
      for (Object child : children) {
        Map<String, Object> vdev = (Map<String, Object>) child;
        vdevs.add(
            new Vdev(
                vdev.get("type") instanceof String type ? type : "",
                vdev.get("nparity") instanceof Long parity ? parity : 0,
                vdev.get("ashift") instanceof Long ashift ? ashift : 0,
                vdev.get("children") instanceof List<?> kids ? kids.size() : 0,
                vdev.get("draid_ndata") instanceof Long data ? data : 0));
      }
    }
    return vdevs;
  }

  private static long dataSize(long blocks, long volblocksize, List<Vdev> vdevs) {
    long worst = 0;
    for (Vdev vdev : vdevs) {
      long reference;
      long allocated;
      if (vdev.type().equals("raidz") && vdev.parity() > 0 && vdev.children() > vdev.parity()) {
        reference = raidzAllocated(vdev.children(), vdev.parity(), vdev.ashift(), REFERENCE_BLOCK);
        allocated = raidzAllocated(vdev.children(), vdev.parity(), vdev.ashift(), volblocksize);
      } else if (vdev.type().equals("draid") && vdev.parity() > 0 && vdev.draidData() > 0) {
        long width = vdev.draidData() + vdev.parity();
        reference = draidAllocated(width, vdev.draidData(), vdev.ashift(), REFERENCE_BLOCK);
        allocated = draidAllocated(width, vdev.draidData(), vdev.ashift(), volblocksize);
      } else {
        continue;
      }
      // Scale in 512-byte units so that a small product does not round down to nothing.
      long scaled = saturatingMultiply(blocks, allocated) / (reference >> SECTOR_SHIFT);
      worst = Math.max(worst, saturatingMultiply(scaled, REFERENCE_BLOCK >> SECTOR_SHIFT));
    }
    return worst == 0 ? saturatingMultiply(blocks, volblocksize) : worst;
  }

  /** Bytes a RAIDZ vdev allocates for one block: data sectors, parity per row, padding. */
  static long raidzAllocated(long disks, long parity, long ashift, long blockSize) {
    long dataDisks = disks - parity;
    long sectors = ((blockSize - 1) >> ashift) + 1;
    sectors += parity * ((sectors + dataDisks - 1) / dataDisks);
    long multiple = parity + 1;
    sectors = (sectors + multiple - 1) / multiple * multiple;
    return sectors << ashift;
  }

  /** Bytes a dRAID vdev allocates for one block: whole rows of the redundancy group. */
  static long draidAllocated(long width, long dataDisks, long ashift, long blockSize) {
    long rows = (blockSize - 1) / (dataDisks << ashift) + 1;
    return (rows * width) << ashift;
  }

  private static long saturatingMultiply(long a, long b) {
    long high = Math.multiplyHigh(a, b);
    long low = a * b;
    return high != 0 || low < 0 ? Long.MAX_VALUE : low;
  }

  private static long saturatingAdd(long a, long b) {
    long sum = a + b;
    return sum < 0 ? Long.MAX_VALUE : sum;
  }
}
