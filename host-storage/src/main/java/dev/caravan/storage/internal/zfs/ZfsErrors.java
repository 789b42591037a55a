package dev.caravan.storage.internal.zfs;

import dev.caravan.storage.internal.sys.Errno;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Names and short explanations for the error numbers ZFS returns: the Linux errnos (with the
 * meaning ZFS gives them) and OpenZFS's own codes from 1024 up ({@code zfs_errno_t} in {@code
 * sys/fs/zfs.h}).
 */
public final class ZfsErrors {
  public static final int EPERM = 1;
  public static final int ENOENT = 2;
  public static final int ESRCH = 3;
  public static final int EINTR = 4;
  public static final int EIO = 5;
  public static final int ENXIO = 6;
  public static final int ENOMEM = 12;
  public static final int EACCES = 13;
  public static final int EBUSY = 16;
  public static final int EEXIST = 17;
  public static final int EXDEV = 18;
  public static final int ENODEV = 19;
  public static final int EINVAL = 22;
  public static final int ETXTBSY = 26;
  public static final int ENOSPC = 28;
  public static final int EPIPE = 32;
  public static final int EDOM = 33;
  public static final int ERANGE = 34;
  public static final int ENAMETOOLONG = 36;
  public static final int ENOTSUP = 95;
  public static final int ETIMEDOUT = 110;
  public static final int EDQUOT = 122;

  /** The first OpenZFS-specific code; the names below follow {@code zfs_errno_t} in order. */
  private static final int ZFS_ERR_FIRST = 1024;

  private static final String[] ZFS_NAMES = {
    "ZFS_ERR_CHECKPOINT_EXISTS",
    "ZFS_ERR_DISCARDING_CHECKPOINT",
    "ZFS_ERR_NO_CHECKPOINT",
    "ZFS_ERR_DEVRM_IN_PROGRESS",
    "ZFS_ERR_VDEV_TOO_BIG",
    "ZFS_ERR_IOC_CMD_UNAVAIL",
    "ZFS_ERR_IOC_ARG_UNAVAIL",
    "ZFS_ERR_IOC_ARG_REQUIRED",
    "ZFS_ERR_IOC_ARG_BADTYPE",
    "ZFS_ERR_WRONG_PARENT",
    "ZFS_ERR_FROM_IVSET_GUID_MISSING",
    "ZFS_ERR_FROM_IVSET_GUID_MISMATCH",
    "ZFS_ERR_SPILL_BLOCK_FLAG_MISSING",
    "ZFS_ERR_UNKNOWN_SEND_STREAM_FEATURE",
    "ZFS_ERR_EXPORT_IN_PROGRESS",
    "ZFS_ERR_BOOKMARK_SOURCE_NOT_ANCESTOR",
    "ZFS_ERR_STREAM_TRUNCATED",
    "ZFS_ERR_STREAM_LARGE_BLOCK_MISMATCH",
    "ZFS_ERR_RESILVER_IN_PROGRESS",
    "ZFS_ERR_REBUILD_IN_PROGRESS",
    "ZFS_ERR_BADPROP",
    "ZFS_ERR_VDEV_NOTSUP",
    "ZFS_ERR_NOT_USER_NAMESPACE",
    "ZFS_ERR_RESUME_EXISTS",
    "ZFS_ERR_CRYPTO_NOTSUP",
    "ZFS_ERR_RAIDZ_EXPAND_IN_PROGRESS",
    "ZFS_ERR_ASHIFT_MISMATCH",
    "ZFS_ERR_STREAM_LARGE_MICROZAP",
  };

  private ZfsErrors() {}

  /** {@code "EBUSY"}, {@code "ZFS_ERR_STREAM_TRUNCATED"}, or {@code "errno 4242"}. */
  /** Converts libzfs_core's error nvlist (name to int32 errno) to names, in order. */
  public static Map<String, String> itemNames(Map<String, Object> errorList) {
    Map<String, String> items = new LinkedHashMap<>();
    errorList.forEach(
        (name, value) -> {
          if (value instanceof Long code) {
            items.put(name, name(code.intValue()));
          }
        });
    return items;
  }

  public static String name(int errno) {
    int zfs = errno - ZFS_ERR_FIRST;
    if (zfs >= 0 && zfs < ZFS_NAMES.length) {
      return ZFS_NAMES[zfs];
    }
    return switch (errno) {
      // ZFS reuses a few rarely used errnos under its own names (sys/zfs_context.h).
      case 52 -> "ECKSUM"; // EBADE
      case 53 -> "EFRAGS"; // EBADR
      default -> Errno.name(errno);
    };
  }

  /** What the error means for a ZFS operation, for messages; empty when nothing useful to add. */
  public static String describe(int errno) {
    return switch (errno) {
      case EPERM, EACCES -> "permission denied";
      case ENOENT -> "does not exist";
      case ESRCH -> "no such dataset or pool";
      case EIO -> "I/O error";
      case ENXIO -> "pool is not available";
      case ENOMEM -> "out of memory";
      case EBUSY -> "busy";
      case EEXIST -> "already exists";
      case EXDEV -> "not in the same pool";
      case ENODEV -> "no such device";
      case EINVAL -> "invalid argument or property";
      case ETXTBSY -> "changed since its newest snapshot";
      case ENOSPC -> "out of space";
      case EDOM, ERANGE -> "value out of range";
      case ENAMETOOLONG -> "name is too long";
      case ENOTSUP -> "not supported by this pool or dataset";
      case ETIMEDOUT -> "timed out";
      case EDQUOT -> "quota exceeded";
      case 52 -> "checksum mismatch";
      case ZFS_ERR_FIRST + 16 -> "send stream ended early";
      case ZFS_ERR_FIRST + 20 -> "bad property";
      default -> "";
    };
  }
}
