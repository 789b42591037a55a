package dev.caravan.storage.internal.zfs;

import static dev.caravan.bindings.zfs.ZfsCore.C_POINTER;

import dev.caravan.bindings.zfs.ZfsCore;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Collection;
import java.util.Map;

/**
 * The libzfs_core calls Caravan makes, with Java arguments. Each returns the error number the
 * library returns (libzfs_core reports errors as return values, not through {@code errno}), plus the
 * per-item error list where the call produces one; every nvlist passed in or handed back is freed
 * here.
 *
 * <p>Only reachable through a {@code Zfs} instance, which exists only after {@link
 * ZfsLibrary#require()} succeeded: an {@code lzc_*} call without that aborts the process.
 */
public final class Lzc {
  /** {@code LZC_SEND_FLAG_LARGE_BLOCK}: blocks over 128 KiB travel whole. */
  public static final int SEND_LARGE_BLOCK = ZfsCore.LZC_SEND_FLAG_LARGE_BLOCK();

  /** {@code LZC_SEND_FLAG_EMBED_DATA}: data embedded in block pointers travels so. */
  public static final int SEND_EMBED_DATA = ZfsCore.LZC_SEND_FLAG_EMBED_DATA();

  /** {@code LZC_SEND_FLAG_COMPRESS}: compressed blocks travel compressed. */
  public static final int SEND_COMPRESS = ZfsCore.LZC_SEND_FLAG_COMPRESS();

  /** {@code LZC_SEND_FLAG_LARGE_BLOCK | EMBED_DATA | COMPRESS}: blocks travel as they are stored. */
  public static final int SEND_AS_STORED = SEND_LARGE_BLOCK | SEND_EMBED_DATA | SEND_COMPRESS;

  /** {@code LZC_SEND_FLAG_RAW}: an encrypted dataset's blocks as stored, still encrypted. */
  public static final int SEND_RAW = ZfsCore.LZC_SEND_FLAG_RAW();

  /**
   * An error number and, when the call returned an error list, its items (item to error name).
   * What a failure means is the caller's to say: the {@code zfs} package raises its exception.
   */
  public record Result(int errno, Map<String, String> itemErrors) {
    public boolean ok() {
      return errno == 0;
    }
  }

  private Lzc() {}

  public static boolean exists(String dataset) {
    try (Arena arena = Arena.ofConfined()) {
      return ZfsCore.lzc_exists(arena.allocateFrom(dataset)) != 0;
    }
  }

  /** {@code lzc_create}: {@code type} is {@code LZC_DATSET_TYPE_ZFS} or {@code _ZVOL}. */
  public static Result create(String dataset, int type, NvList properties) {
    return create(dataset, type, properties, null);
  }

  /**
   * {@code lzc_create} of an encryption root: {@code wrappingKey} (32 bytes, or null for none) is
   * copied into native memory for the call only, and that memory is zeroed before it is freed.
   */
  public static Result create(String dataset, int type, NvList properties, byte[] wrappingKey) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment key = MemorySegment.NULL;
      if (wrappingKey != null) {
        key = arena.allocate(ValueLayout.JAVA_BYTE, wrappingKey.length);
        MemorySegment.copy(wrappingKey, 0, key, ValueLayout.JAVA_BYTE, 0, wrappingKey.length);
      }
      try {
        int errno =
            ZfsCore.lzc_create(
                arena.allocateFrom(dataset),
                type,
                properties == null ? MemorySegment.NULL : properties.handle(),
                key,
                wrappingKey == null ? 0 : wrappingKey.length);
        return new Result(errno, Map.of());
      } finally {
        if (wrappingKey != null) {
          key.fill((byte) 0);
        }
      }
    }
  }

  /** {@code lzc_destroy}: one filesystem or volume, never recursive. */
  public static Result destroy(String dataset) {
    try (Arena arena = Arena.ofConfined()) {
      return new Result(ZfsCore.lzc_destroy(arena.allocateFrom(dataset)), Map.of());
    }
  }

  /** {@code lzc_snapshot}: atomically, all of {@code snapshots}, each with user properties. */
  public static Result snapshot(Collection<String> snapshots, NvList userProperties) {
    try (Arena arena = Arena.ofConfined();
        NvList names = names(snapshots)) {
      MemorySegment errors = arena.allocateFrom(C_POINTER, MemorySegment.NULL);
      int errno =
          ZfsCore.lzc_snapshot(
              names.handle(),
              userProperties == null ? MemorySegment.NULL : userProperties.handle(),
              errors);
      return new Result(errno, takeErrors(errors));
    }
  }

  /** {@code lzc_destroy_snaps} without defer: fails (EEXIST) rather than waiting for clones. */
  public static Result destroySnapshots(Collection<String> snapshots) {
    try (Arena arena = Arena.ofConfined();
        NvList names = names(snapshots)) {
      MemorySegment errors = arena.allocateFrom(C_POINTER, MemorySegment.NULL);
      int errno = ZfsCore.lzc_destroy_snaps(names.handle(), 0, errors);
      return new Result(errno, takeErrors(errors));
    }
  }

  /** {@code lzc_send}: a full stream of {@code snapshot} written to {@code fd}. */
  public static Result send(String snapshot, int fd, int flags) {
    try (Arena arena = Arena.ofConfined()) {
      int errno = ZfsCore.lzc_send(arena.allocateFrom(snapshot), MemorySegment.NULL, fd, flags);
      return new Result(errno, Map.of());
    }
  }

  /**
   * {@code lzc_send} of the changes from {@code from} (an earlier snapshot of the same dataset, full
   * name) to {@code snapshot}; a full stream when {@code from} is null.
   */
  public static Result send(String snapshot, String from, int fd, int flags) {
    try (Arena arena = Arena.ofConfined()) {
      int errno =
          ZfsCore.lzc_send(arena.allocateFrom(snapshot), cString(arena, from), fd, flags);
      return new Result(errno, Map.of());
    }
  }

  /**
   * {@code lzc_send_resume}: the rest of a stream of {@code snapshot} (from {@code from}, or full
   * when null) from object {@code object} at byte {@code offset}, where a resumable receive stopped.
   */
  public static Result sendResume(
      String snapshot, String from, int fd, int flags, long object, long offset) {
    try (Arena arena = Arena.ofConfined()) {
      int errno =
          ZfsCore.lzc_send_resume(
              arena.allocateFrom(snapshot), cString(arena, from), fd, flags, object, offset);
      return new Result(errno, Map.of());
    }
  }

  /** An error number and, when it is 0, the estimated size of a send stream in bytes. */
  public record Space(int errno, long bytes) {}

  /** {@code lzc_send_space}: the estimated size of the stream {@link #send} would write. */
  public static Space sendSpace(String snapshot, String from, int flags) {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment space = arena.allocate(ValueLayout.JAVA_LONG);
      int errno =
          ZfsCore.lzc_send_space(arena.allocateFrom(snapshot), cString(arena, from), flags, space);
      return new Space(errno, errno == 0 ? space.get(ValueLayout.JAVA_LONG, 0) : 0);
    }
  }

  /**
   * {@code lzc_receive_resumable}: a stream read from {@code fd} becomes {@code snapshot} ({@code
   * dataset@name}), full or incremental onto the dataset's newest snapshot, or continues the partial
   * receive a resume stream belongs to. A receive that fails part way leaves its state for a
   * resume (the dataset's {@code receive_resume_token}) instead of removing it. {@code properties}
   * are set as received properties.
   */
  public static Result receiveResumable(String snapshot, NvList properties, int fd) {
    try (Arena arena = Arena.ofConfined()) {
      int errno =
          ZfsCore.lzc_receive_resumable(
              arena.allocateFrom(snapshot),
              properties == null ? MemorySegment.NULL : properties.handle(),
              MemorySegment.NULL,
              0,
              0,
              fd);
      return new Result(errno, Map.of());
    }
  }

  private static MemorySegment cString(Arena arena, String value) {
    return value == null ? MemorySegment.NULL : arena.allocateFrom(value);
  }

  /**
   * {@code lzc_receive}: a full stream read from {@code fd} becomes the new dataset and snapshot
   * {@code snapshot} ({@code dataset@name}); {@code properties} are set as received properties.
   */
  public static Result receive(String snapshot, NvList properties, int fd) {
    return receive(snapshot, properties, false, fd);
  }

  /**
   * {@code lzc_receive}; {@code raw} for a raw stream ({@link ZfsCore#LZC_SEND_FLAG_RAW()}) of an
   * encrypted dataset, which arrives still encrypted, its own encryption root with the source's
   * wrapping key parameters and no key loaded.
   */
  public static Result receive(String snapshot, NvList properties, boolean raw, int fd) {
    try (Arena arena = Arena.ofConfined()) {
      int errno =
          ZfsCore.lzc_receive(
              arena.allocateFrom(snapshot),
              properties == null ? MemorySegment.NULL : properties.handle(),
              MemorySegment.NULL,
              0,
              raw ? 1 : 0,
              fd);
      return new Result(errno, Map.of());
    }
  }

  private static NvList names(Collection<String> names) {
    NvList list = NvList.create();
    try {
      names.forEach(list::addFlag);
      return list;
    } catch (RuntimeException e) {
      list.close();
      throw e;
    }
  }

  /** Reads and frees the error nvlist libzfs_core allocated into {@code *errors}, if any. */
  private static Map<String, String> takeErrors(MemorySegment errors) {
    MemorySegment list = errors.get(C_POINTER, 0);
    if (NvList.isNull(list)) {
      return Map.of();
    }
    try {
      return ZfsErrors.itemNames(NvList.read(list));
    } finally {
      ZfsCore.nvlist_free(list);
    }
  }
}
