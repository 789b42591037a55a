package dev.caravan.storage.fs;

import dev.caravan.storage.internal.sys.Fd;
import dev.caravan.storage.internal.sys.Ioctl;
import dev.caravan.storage.internal.sys.Libc;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A frozen filesystem: writes to it block until {@link #close()} thaws it. Thawing goes through the
 * descriptor the freeze used, so it reaches the same filesystem even if something has been mounted
 * over the mount point since.
 */
public final class Frozen implements AutoCloseable {
  private final Path mountPoint;
  private final Fd fd;
  private final AtomicBoolean thawed = new AtomicBoolean();

  Frozen(Path mountPoint, Fd fd) {
    this.mountPoint = mountPoint;
    this.fd = fd;
  }

  public Path mountPoint() {
    return mountPoint;
  }

  /** Thaws the filesystem ({@code FITHAW}). Closing again does nothing. */
  @Override
  public void close() {
    if (thawed.compareAndSet(false, true)) {
      try (fd) {
        Libc.ioctl(fd, Ioctl.FITHAW, 0);
      }
    }
  }
}
