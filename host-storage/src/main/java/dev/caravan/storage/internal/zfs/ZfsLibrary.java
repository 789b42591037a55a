package dev.caravan.storage.internal.zfs;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.bindings.zfs.ZfsCore;
import dev.caravan.storage.NativeLibraryUnavailableException;
import java.util.Objects;
import java.util.function.IntSupplier;
import java.util.function.Supplier;

/**
 * The one gate in front of libzfs_core.
 *
 * <p>libzfs_core keeps a process-wide descriptor on {@code /dev/zfs}, opened by {@code
 * libzfs_core_init()}. Every {@code lzc_*} function asserts that descriptor is open, so calling one
 * after a failed (or missing) init kills the whole JVM with {@code abort()}. This class makes that
 * impossible: {@link #require()} is the only way to reach code that calls {@code lzc_*}, and it
 * throws {@link NativeLibraryUnavailableException} instead.
 *
 * <p>A successful init is kept for the life of the process (the library's reference count is never
 * dropped), so no {@code lzc_*} call can race with a {@code libzfs_core_fini()}. A failure is
 * remembered and reported, and the next {@link #require()} tries again: the zfs module may be
 * loaded later in a long-running agent.
 */
public final class ZfsLibrary {
  /** The device libzfs_core and our own ioctls talk to. */
  public static final String DEVICE = "/dev/zfs";

  private static final ZfsLibrary PROCESS =
      new ZfsLibrary(
          () -> NativeLibraries.status(NativeLibraries.Library.ZFS_CORE),
          ZfsCore::libzfs_core_init);

  private final Supplier<NativeLibraries.Status> libraryStatus;
  private final IntSupplier init;
  private boolean initialized;
  private String lastFailure;

  /** Package-private: tests substitute the library status and the init call. */
  ZfsLibrary(Supplier<NativeLibraries.Status> libraryStatus, IntSupplier init) {
    this.libraryStatus = Objects.requireNonNull(libraryStatus, "libraryStatus");
    this.init = Objects.requireNonNull(init, "init");
  }

  /** The process-wide gate. */
  public static ZfsLibrary process() {
    return PROCESS;
  }

  /**
   * Returns once libzfs_core is loaded and initialised; otherwise throws, naming what is missing.
   * Safe to call any number of times, from any thread.
   */
  public synchronized void require() {
    if (initialized) {
      return;
    }
    NativeLibraries.Status status = libraryStatus.get();
    if (!status.available()) {
      lastFailure =
          "ZFS is not available on this host: " + status.problem().orElse("libzfs_core is missing");
      throw new NativeLibraryUnavailableException(lastFailure, null);
    }
    int errno = init.getAsInt();
    if (errno != 0) {
      lastFailure =
          "ZFS is not available on this host: "
              + DEVICE
              + ": "
              + ZfsErrors.name(errno)
              + (errno == ZfsErrors.ENOENT || errno == ZfsErrors.ENXIO
                  ? " (is the zfs kernel module loaded?)"
                  : errno == ZfsErrors.EACCES || errno == ZfsErrors.EPERM
                      ? " (ZFS needs root or CAP_SYS_ADMIN)"
                      : "");
      throw new NativeLibraryUnavailableException(lastFailure, null);
    }
    initialized = true;
    lastFailure = null;
  }

  /** Whether a {@link #require()} has succeeded. */
  public synchronized boolean isInitialized() {
    return initialized;
  }

  /** The message of the last failed {@link #require()}, or null. */
  public synchronized String lastFailure() {
    return lastFailure;
  }
}
