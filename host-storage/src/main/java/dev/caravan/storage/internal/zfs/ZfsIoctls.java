package dev.caravan.storage.internal.zfs;

import dev.caravan.bindings.zfs.ZfsCore;
import dev.caravan.storage.SyscallException;
import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Ioctl;
import dev.caravan.storage.internal.sys.KernelBuffers;
import dev.caravan.storage.internal.sys.Libc;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The raw ioctls on {@code /dev/zfs} that libzfs_core does not wrap: pool stats, objset stats, the
 * two list iterators and set-property.
 *
 * <p>On Linux the request number of a ZFS ioctl is the {@code zfs_ioc_t} value itself ({@code
 * 'Z' << 8} plus an index), not an {@code _IOWR} encoding: libzfs passes it straight to {@code
 * ioctl(2)} and the kernel's handler subtracts {@code ZFS_IOC_FIRST}. The argument is always a
 * {@link ZfsCommand}. Nvlists travel packed: the request's in {@code zc_nvlist_src}, the reply in a
 * buffer we provide through {@code zc_nvlist_dst}; when that buffer is too small the kernel fails
 * with ENOMEM and writes the size it needs into {@code zc_nvlist_dst_size}, and we retry with a
 * bigger one. Every call uses its own {@link KernelBuffers}: nothing outlives it, and a copy-out past
 * the {@code zfs_cmd_t} or the reply buffer stops the process instead of corrupting memory.
 */
public final class ZfsIoctls implements AutoCloseable {
  private static final int O_RDWR = 2;
  private static final long FIRST_REPLY_SIZE = 16 * 1024;
  private static final long MAX_REPLY_SIZE = 256L * 1024 * 1024;

  static final Ioctl POOL_STATS = new Ioctl("ZFS_IOC_POOL_STATS", ZfsCore.ZFS_IOC_POOL_STATS());
  static final Ioctl OBJSET_STATS =
      new Ioctl("ZFS_IOC_OBJSET_STATS", ZfsCore.ZFS_IOC_OBJSET_STATS());
  static final Ioctl DATASET_LIST_NEXT =
      new Ioctl("ZFS_IOC_DATASET_LIST_NEXT", ZfsCore.ZFS_IOC_DATASET_LIST_NEXT());
  static final Ioctl SNAPSHOT_LIST_NEXT =
      new Ioctl("ZFS_IOC_SNAPSHOT_LIST_NEXT", ZfsCore.ZFS_IOC_SNAPSHOT_LIST_NEXT());
  static final Ioctl SET_PROP = new Ioctl("ZFS_IOC_SET_PROP", ZfsCore.ZFS_IOC_SET_PROP());

  private final Fd device;

  private ZfsIoctls(Fd device) {
    this.device = device;
  }

  /** Opens {@code /dev/zfs}; call only after {@link ZfsLibrary#require()}. */
  public static ZfsIoctls open() {
    return new ZfsIoctls(Libc.open(Path.of(ZfsLibrary.DEVICE), O_RDWR));
  }

  /**
   * What one ioctl returned, copied out of native memory.
   *
   * @param errno 0 on success
   * @param name {@code zc_name} after the call (list ioctls write the next name there)
   * @param cookie {@code zc_cookie} after the call
   * @param stats {@code zc_objset_stats} after the call
   * @param reply the unpacked {@code zc_nvlist_dst}, empty when none was asked for or filled in
   */
  public record Reply(
      int errno, String name, long cookie, ZfsCommand.ObjsetStats stats, Map<String, Object> reply) {
    public boolean ok() {
      return errno == 0;
    }
  }

  /**
   * {@code ZFS_IOC_POOL_STATS}: the pool's config nvlist. Fails with ENOENT when no such pool is
   * imported. On success {@link Reply#cookie()} holds the pool's real error (non-zero: faulted).
   */
  public Reply poolStats(String pool) {
    return call(POOL_STATS, pool, null, true, zc -> {});
  }

  /**
   * {@code ZFS_IOC_OBJSET_STATS}: the dataset's fast stats and, when {@code properties}, its
   * property nvlist (each property name mapping to {@code {value, source}}).
   */
  public Reply objsetStats(String dataset, boolean properties) {
    return call(OBJSET_STATS, dataset, null, properties, zc -> zc.simple(!properties));
  }

  /**
   * What a list ioctl walk found, in the kernel's order; {@code failure} is the reply that ended
   * the walk early, when one did (the caller raises it).
   */
  public record Listing(List<Reply> entries, Optional<Reply> failure) {}

  /** The direct children of {@code dataset} (filesystems and volumes). */
  public Listing children(String dataset) {
    return list(DATASET_LIST_NEXT, dataset);
  }

  /** The snapshots of {@code dataset} with their fast stats. */
  public Listing snapshots(String dataset) {
    return list(SNAPSHOT_LIST_NEXT, dataset);
  }

  /**
   * {@code ZFS_IOC_SET_PROP} with locally set {@code properties}; the reply holds the per-property
   * errors, if any.
   */
  public Reply setProperties(String dataset, NvList properties) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment packed = properties.pack(arena);
      return call(SET_PROP, dataset, packed, true, zc -> zc.cookie(0)); // 0: local, not received
    }
  }

  private Listing list(Ioctl request, String dataset) {
    List<Reply> entries = new ArrayList<>();
    long cookie = 0;
    while (true) {
      long cursor = cookie;
      Reply reply = call(request, dataset, null, false, zc -> zc.simple(true).cookie(cursor));
      if (reply.errno() == ZfsErrors.ESRCH) {
        return new Listing(entries, Optional.empty());
      }
      if (!reply.ok()) {
        return new Listing(entries, Optional.of(reply));
      }
      // Internal ($) and temporary (%) datasets are hidden, as the kernel itself mostly does.
      if (reply.name().indexOf('$') < 0 && reply.name().indexOf('%') < 0) {
        entries.add(reply);
      }
      if (reply.cookie() == cookie) {
        throw new IllegalStateException(request + " did not advance its cursor on " + dataset);
      }
      cookie = reply.cookie();
    }
  }

  /**
   * One ioctl, retried while the reply buffer is too small (ENOMEM) or a signal interrupted it.
   * Returns the errno rather than throwing, so callers decide what an error means.
   */
  private Reply call(
      Ioctl request,
      String name,
      MemorySegment packedSource,
      boolean wantReply,
      Consumer<ZfsCommand> setup) {
    long replySize = wantReply ? FIRST_REPLY_SIZE : 0;
    int interruptions = 0;
    while (true) {
      try (KernelBuffers buffers = new KernelBuffers()) {
        ZfsCommand zc = ZfsCommand.allocate(buffers).name(name);
        if (packedSource != null) {
          zc.source(packedSource);
        }
        MemorySegment buffer = null;
        if (wantReply) {
          buffer = buffers.allocate("zc_nvlist_dst", replySize, 8);
          zc.destination(buffer);
        }
        setup.accept(zc);
        int errno = 0;
        try {
          buffers.ioctl(device, request, zc.segment());
        } catch (SyscallException e) {
          errno = e.errno();
        }
        if (errno == ZfsErrors.ENOMEM && wantReply && zc.destinationSize() > replySize) {
          replySize = Math.max(zc.destinationSize(), 2 * replySize);
          if (replySize > MAX_REPLY_SIZE) {
            return new Reply(errno, name, 0, zc.objsetStats(), Map.of());
          }
          continue;
        }
        if (errno == ZfsErrors.EINTR && ++interruptions < 10) {
          continue;
        }
        Map<String, Object> reply =
            wantReply && errno != ZfsErrors.ENOMEM ? reply(zc, buffer) : Map.of();
        return new Reply(errno, zc.name(), zc.cookie(), zc.objsetStats(), reply);
      }
    }
  }

  /**
   * The nvlist the kernel packed into {@code buffer}, as it reported in {@code zc}. A reported size
   * beyond the buffer is refused rather than trusted: libnvpair would read past the buffer's end.
   */
  static Map<String, Object> reply(ZfsCommand zc, MemorySegment buffer) {
    long size = zc.destinationSize();
    if (!zc.destinationFilled() || size == 0) {
      return Map.of();
    }
    if (size < 0 || size > buffer.byteSize()) {
      throw new IllegalStateException(
          "the kernel reported a reply of "
              + Long.toUnsignedString(size)
              + " bytes in a buffer of "
              + buffer.byteSize()
              + ": refusing to read past the buffer");
    }
    return NvList.unpack(buffer.asSlice(0, size));
  }

  @Override
  public void close() {
    device.close();
  }
}
