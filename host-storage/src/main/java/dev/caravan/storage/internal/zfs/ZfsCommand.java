package dev.caravan.storage.internal.zfs;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.MemoryLayout.paddingLayout;
import static java.lang.foreign.MemoryLayout.sequenceLayout;
import static java.lang.foreign.MemoryLayout.structLayout;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import dev.caravan.storage.internal.sys.KernelBuffers;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.nio.charset.StandardCharsets;

/**
 * {@code zfs_cmd_t}, the argument of every ioctl on {@code /dev/zfs}.
 *
 * <p>The struct lives in OpenZFS's {@code include/sys/zfs_ioctl.h}, which distributions do not
 * install, so jextract cannot generate it. The layout below is written from the OpenZFS 2.3
 * definition (tag zfs-2.3.2): a 4 KiB name, the nvlist buffer descriptors, then the legacy fields.
 * OpenZFS pads the struct by hand so that 32- and 64-bit processes share one layout, so every
 * offset here is fixed: 13744 bytes in all. The struct does change between releases (2.3.1's is 16
 * bytes larger), so the facade only talks to a module of a version in {@link
 * ZfsModuleVersion#VERIFIED}. {@code native/zfs-cmd/layout.c} prints the real offsets and sizes
 * from a version's headers; its output is committed as {@code native/zfs-cmd/zfs_cmd_t.layout},
 * and {@code ZfsCommandTest} compares every member below with that table and, where a C compiler
 * and the headers are installed, the table with the headers.
 *
 * <p>Caravan reads and writes only: {@code zc_name}, the {@code zc_nvlist_src}/{@code
 * zc_nvlist_dst} pointers and sizes, {@code zc_cookie} (list cursor; on {@code POOL_STATS} the
 * pool's real error), {@code zc_simple} (skip property nvlists when listing) and {@code
 * zc_objset_stats} ({@code dmu_objset_stats_t}: type, snapshot flag, clone count, origin). The
 * rest is kept as opaque bytes of the right size.
 */
public final class ZfsCommand {
  /** {@code MAXPATHLEN}: the size of {@code zc_name}. */
  public static final int NAME_SIZE = 4096;

  /** {@code ZFS_MAX_DATASET_NAME_LEN}. */
  public static final int MAX_DATASET_NAME = 256;

  /** {@code dmu_objset_type_t} of a filesystem, in {@code dds_type}. */
  public static final int DMU_OST_ZFS = 2;

  /** {@code dmu_objset_type_t} of a volume, in {@code dds_type}. */
  public static final int DMU_OST_ZVOL = 3;

  /** {@code dmu_objset_stats_t}: what {@code dmu_objset_fast_stat} fills in. */
  public static final StructLayout OBJSET_STATS =
      structLayout(
          JAVA_LONG.withName("dds_num_clones"),
          JAVA_LONG.withName("dds_creation_txg"),
          JAVA_LONG.withName("dds_guid"),
          JAVA_INT.withName("dds_type"), // dmu_objset_type_t
          JAVA_BYTE.withName("dds_is_snapshot"),
          JAVA_BYTE.withName("dds_inconsistent"),
          JAVA_BYTE.withName("dds_redacted"),
          sequenceLayout(MAX_DATASET_NAME, JAVA_BYTE).withName("dds_origin"),
          paddingLayout(1))
          .withName("dmu_objset_stats_t");

  public static final StructLayout LAYOUT =
      structLayout(
          sequenceLayout(NAME_SIZE, JAVA_BYTE).withName("zc_name"),
          JAVA_LONG.withName("zc_nvlist_src"),
          JAVA_LONG.withName("zc_nvlist_src_size"),
          JAVA_LONG.withName("zc_nvlist_dst"),
          JAVA_LONG.withName("zc_nvlist_dst_size"),
          JAVA_INT.withName("zc_nvlist_dst_filled"),
          JAVA_INT.withName("zc_pad2"),
          JAVA_LONG.withName("zc_history"),
          sequenceLayout(2 * NAME_SIZE, JAVA_BYTE).withName("zc_value"),
          sequenceLayout(256, JAVA_BYTE).withName("zc_string"), // MAXNAMELEN
          JAVA_LONG.withName("zc_guid"),
          JAVA_LONG.withName("zc_nvlist_conf"),
          JAVA_LONG.withName("zc_nvlist_conf_size"),
          JAVA_LONG.withName("zc_cookie"),
          JAVA_LONG.withName("zc_objset_type"),
          JAVA_LONG.withName("zc_perm_action"),
          JAVA_LONG.withName("zc_history_len"),
          JAVA_LONG.withName("zc_history_offset"),
          JAVA_LONG.withName("zc_obj"),
          JAVA_LONG.withName("zc_iflags"),
          sequenceLayout(4, JAVA_LONG).withName("zc_share"), // zfs_share_t: four uint64
          OBJSET_STATS.withName("zc_objset_stats"),
          // struct drr_begin: five uint64 and two 32-bit fields, then a MAXNAMELEN name
          sequenceLayout(304, JAVA_BYTE).withName("zc_begin_record"),
          // zinject_record_t: fault-injection parameters, never used here
          sequenceLayout(352, JAVA_BYTE).withName("zc_inject_record"),
          JAVA_INT.withName("zc_defer_destroy"),
          JAVA_INT.withName("zc_flags"),
          JAVA_LONG.withName("zc_action_handle"),
          JAVA_INT.withName("zc_cleanup_fd"),
          JAVA_BYTE.withName("zc_simple"),
          sequenceLayout(3, JAVA_BYTE).withName("zc_pad"),
          JAVA_LONG.withName("zc_sendobj"),
          JAVA_LONG.withName("zc_fromobj"),
          JAVA_LONG.withName("zc_createtxg"),
          sequenceLayout(5, JAVA_LONG).withName("zc_stat"), // zfs_stat_t
          JAVA_LONG.withName("zc_zoneid"))
          .withName("zfs_cmd_t");

  static final long NAME = offset("zc_name");
  static final long NVLIST_SRC = offset("zc_nvlist_src");
  static final long NVLIST_SRC_SIZE = offset("zc_nvlist_src_size");
  static final long NVLIST_DST = offset("zc_nvlist_dst");
  static final long NVLIST_DST_SIZE = offset("zc_nvlist_dst_size");
  static final long NVLIST_DST_FILLED = offset("zc_nvlist_dst_filled");
  static final long COOKIE = offset("zc_cookie");
  static final long SIMPLE = offset("zc_simple");
  static final long OBJSET_STATS_OFFSET = offset("zc_objset_stats");

  private final MemorySegment segment;

  private ZfsCommand(MemorySegment segment) {
    this.segment = segment;
  }

  /** A zeroed command, guarded against a kernel whose {@code zfs_cmd_t} is larger. */
  public static ZfsCommand allocate(KernelBuffers buffers) {
    return new ZfsCommand(buffers.allocate("zfs_cmd_t", LAYOUT));
  }

  public MemorySegment segment() {
    return segment;
  }

  public String name() {
    return segment.getString(NAME, StandardCharsets.UTF_8);
  }

  public ZfsCommand name(String name) {
    byte[] bytes = name.getBytes(StandardCharsets.UTF_8);
    if (bytes.length >= NAME_SIZE) {
      throw new IllegalArgumentException("name too long for zfs_cmd_t: " + name);
    }
    segment.asSlice(NAME, NAME_SIZE).fill((byte) 0);
    MemorySegment.copy(bytes, 0, segment, JAVA_BYTE, NAME, bytes.length);
    return this;
  }

  public ZfsCommand source(MemorySegment packed) {
    segment.set(JAVA_LONG, NVLIST_SRC, packed.address());
    segment.set(JAVA_LONG, NVLIST_SRC_SIZE, packed.byteSize());
    return this;
  }

  public ZfsCommand destination(MemorySegment buffer) {
    segment.set(JAVA_LONG, NVLIST_DST, buffer.address());
    segment.set(JAVA_LONG, NVLIST_DST_SIZE, buffer.byteSize());
    segment.set(JAVA_INT, NVLIST_DST_FILLED, 0);
    return this;
  }

  /** The size the kernel reported for the destination nvlist (what it needs, after ENOMEM). */
  public long destinationSize() {
    return segment.get(JAVA_LONG, NVLIST_DST_SIZE);
  }

  public boolean destinationFilled() {
    return segment.get(JAVA_INT, NVLIST_DST_FILLED) != 0;
  }

  public long cookie() {
    return segment.get(JAVA_LONG, COOKIE);
  }

  public ZfsCommand cookie(long cookie) {
    segment.set(JAVA_LONG, COOKIE, cookie);
    return this;
  }

  /** Asks list ioctls to skip the property nvlist (only the fast objset stats are filled in). */
  public ZfsCommand simple(boolean simple) {
    segment.set(JAVA_BYTE, SIMPLE, (byte) (simple ? 1 : 0));
    return this;
  }

  public ObjsetStats objsetStats() {
    MemorySegment stats = segment.asSlice(OBJSET_STATS_OFFSET, OBJSET_STATS.byteSize());
    long origin = OBJSET_STATS.byteOffset(groupElement("dds_origin"));
    return new ObjsetStats(
        stats.get(JAVA_LONG, OBJSET_STATS.byteOffset(groupElement("dds_num_clones"))),
        stats.get(JAVA_LONG, OBJSET_STATS.byteOffset(groupElement("dds_creation_txg"))),
        stats.get(JAVA_LONG, OBJSET_STATS.byteOffset(groupElement("dds_guid"))),
        stats.get(JAVA_INT, OBJSET_STATS.byteOffset(groupElement("dds_type"))),
        stats.get(JAVA_BYTE, OBJSET_STATS.byteOffset(groupElement("dds_is_snapshot"))) != 0,
        stats.get(JAVA_BYTE, OBJSET_STATS.byteOffset(groupElement("dds_inconsistent"))) != 0,
        stats.asSlice(origin, MAX_DATASET_NAME).getString(0, StandardCharsets.UTF_8));
  }

  /**
   * {@code dmu_objset_stats_t} as Java values.
   *
   * @param type {@code dmu_objset_type_t}: 2 filesystem, 3 volume
   * @param origin the origin snapshot of a (dependent) clone, empty otherwise
   */
  public record ObjsetStats(
      long numClones,
      long creationTxg,
      long guid,
      int type,
      boolean snapshot,
      boolean inconsistent,
      String origin) {}

  private static long offset(String field) {
    return LAYOUT.byteOffset(groupElement(field));
  }
}
