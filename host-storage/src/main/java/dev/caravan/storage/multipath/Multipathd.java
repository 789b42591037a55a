package dev.caravan.storage.multipath;

import dev.caravan.storage.StorageException;
import dev.caravan.storage.SyscallException;
import dev.caravan.storage.internal.sys.UnixSocket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A client of multipathd's command socket: the abstract unix socket {@code
 * /org/kernel/linux/storage/multipathd} that the {@code multipathd} command and libmpathcmd talk
 * to. The protocol is one request, one reply, each framed by its length as a native {@code size_t}
 * (8 bytes, little-endian on x86_64) followed by that many bytes of NUL-terminated text. Commands
 * that change state need root (multipathd checks the peer's credentials).
 */
final class Multipathd {
  static final String SOCKET = "/org/kernel/linux/storage/multipathd";
  // multipathd's own ceiling on a reply it sends is far below this; anything larger is garbage.
  private static final long MAX_REPLY = 64L << 20;

  private final String socket;
  private final Duration timeout;

  Multipathd(String socket, Duration timeout) {
    this.socket = socket;
    this.timeout = timeout;
  }

  /**
   * Sends {@code command} and returns multipathd's reply, without its terminating NUL.
   *
   * @throws StorageException when multipathd is not running, does not answer within the timeout,
   *     or closes the connection
   */
  String send(String command) {
    UnixSocket connection;
    try {
      connection = UnixSocket.connectAbstract(socket, timeout);
    } catch (SyscallException e) {
      throw new StorageException(
          "cannot reach multipathd at @" + socket + " (is multipathd running?): " + e.getMessage(),
          e);
    }
    try (connection) {
      connection.write(frame(command));
      long length =
          ByteBuffer.wrap(connection.readExactly(Long.BYTES)).order(ByteOrder.nativeOrder()).getLong();
      if (length < 0 || length > MAX_REPLY) {
        throw new StorageException("multipathd answered '" + command + "' with a reply of " + length + " bytes");
      }
      return text(connection.readExactly((int) length));
    } catch (SyscallException e) {
      throw new StorageException(
          "multipathd did not answer '" + command + "' within " + timeout + ": " + e.getMessage(), e);
    }
  }

  /** The request bytes: the length (with the NUL) as a size_t, the command, a NUL. */
  static byte[] frame(String command) {
    byte[] text = command.getBytes(StandardCharsets.UTF_8);
    ByteBuffer frame = ByteBuffer.allocate(Long.BYTES + text.length + 1).order(ByteOrder.nativeOrder());
    frame.putLong(text.length + 1L).put(text).put((byte) 0);
    return frame.array();
  }

  /** A reply's text: everything before the first NUL. */
  static String text(byte[] reply) {
    int end = 0;
    while (end < reply.length && reply[end] != 0) {
      end++;
    }
    return new String(reply, 0, end, StandardCharsets.UTF_8);
  }
}
