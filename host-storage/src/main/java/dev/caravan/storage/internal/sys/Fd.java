package dev.caravan.storage.internal.sys;

/**
 * An open file descriptor. It remembers the path it was opened on so that a failed {@code fsync} or
 * {@code ioctl} on it names the file rather than a bare number.
 */
public record Fd(int number, String path) implements AutoCloseable {
  @Override
  public void close() {
    Libc.close(this);
  }

  @Override
  public String toString() {
    return path;
  }
}
