package dev.caravan.csi.backend;

import java.util.Arrays;

/**
 * The bytes of a volume's encryption passphrase, held for as long as one call needs them: {@link
 * #close()} overwrites them with zeros, and nothing here ever prints them ({@link #toString()} says
 * only that a passphrase is there). Made by {@link Encryption#passphrase}, which checks the rule ZFS
 * and LUKS2 share (8 to 512 bytes).
 */
public final class Passphrase implements AutoCloseable {
  private final byte[] bytes;
  private boolean closed;

  /** Takes {@code bytes} over: the caller hands them in and keeps no reference. */
  Passphrase(byte[] bytes) {
    this.bytes = bytes;
  }

  /**
   * The passphrase itself, valid until {@link #close()}: callers pass it straight to the call that
   * needs it and neither keep nor change the array.
   */
  @SuppressWarnings("MutablePublicArray") // a copy would be one more unzeroed buffer
  public synchronized byte[] bytes() {
    if (closed) {
      throw new IllegalStateException("the passphrase was closed (its bytes are zeroed)");
    }
    return bytes;
  }

  /** How many bytes it has. */
  public int length() {
    return bytes.length;
  }

  /** Overwrites the bytes with zeros; later {@link #bytes()} calls fail. */
  @Override
  public synchronized void close() {
    Arrays.fill(bytes, (byte) 0);
    closed = true;
  }

  @Override
  public String toString() {
    return "Passphrase[redacted]";
  }
}
