package dev.caravan.storage.internal.sys;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A connected {@code AF_UNIX} stream socket whose address is in Linux's abstract namespace (a name
 * that starts with a NUL byte and has no file). Java's {@code UnixDomainSocketAddress} takes file
 * paths only, and daemons such as multipathd listen on abstract names, hence these downcalls.
 * Reads and writes give up after the timeout given at connect time ({@code SO_RCVTIMEO}/{@code
 * SO_SNDTIMEO}), so a stuck daemon cannot hang the caller.
 */
public final class UnixSocket implements AutoCloseable {
  // Linux x86_64 ABI values (<sys/socket.h>, <asm-generic/socket.h>).
  private static final int AF_UNIX = 1;
  private static final int SOCK_STREAM = 1;
  private static final int SOCK_CLOEXEC = 02000000;
  private static final int SOL_SOCKET = 1;
  private static final int SO_RCVTIMEO = 20;
  private static final int SO_SNDTIMEO = 21;
  private static final int SUN_PATH_OFFSET = 2; // sockaddr_un: sa_family_t, then sun_path[108]
  private static final int SUN_PATH_SIZE = 108;

  // Holder classes: each downcall stub is made on its first call, not at start-up (see Libc).
  private static final class Socket {
    static final MethodHandle HANDLE = Libc.syscall("socket", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT);
  }

  private static final class Connect {
    static final MethodHandle HANDLE = Libc.syscall("connect", JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);
  }

  private static final class Setsockopt {
    static final MethodHandle HANDLE =
        Libc.syscall("setsockopt", JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT);
  }

  private final Fd fd;
  private final String name;

  private UnixSocket(Fd fd, String name) {
    this.fd = fd;
    this.name = name;
  }

  /**
   * Connects to the abstract socket {@code name} (without the leading NUL), with {@code timeout}
   * for every later read and write.
   */
  public static UnixSocket connectAbstract(String name, Duration timeout) {
    byte[] nameBytes = name.getBytes(StandardCharsets.UTF_8);
    if (nameBytes.length + 1 > SUN_PATH_SIZE) {
      throw new IllegalArgumentException("abstract socket name too long: " + name);
    }
    String described = "@" + name;
    try (Arena arena = Arena.ofConfined()) {
      int number =
          (int)
              Libc.call(
                  arena,
                  state ->
                      (int) Socket.HANDLE.invokeExact(state, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0),
                  "socket",
                  "AF_UNIX",
                  "SOCK_STREAM");
      Fd fd = new Fd(number, described);
      try {
        MemorySegment timeval = arena.allocate(JAVA_LONG, 2);
        long millis = Math.max(1, timeout.toMillis());
        timeval.setAtIndex(JAVA_LONG, 0, millis / 1000);
        timeval.setAtIndex(JAVA_LONG, 1, (millis % 1000) * 1000);
        for (int option : new int[] {SO_RCVTIMEO, SO_SNDTIMEO}) {
          Libc.call(
              arena,
              state ->
                  (int)
                      Setsockopt.HANDLE.invokeExact(
                          state, number, SOL_SOCKET, option, timeval, (int) timeval.byteSize()),
              "setsockopt",
              fd,
              option);
        }
        // The address length counts the leading NUL and the name, and no terminating NUL: the
        // kernel compares all of those bytes, so a trailing NUL would name another socket.
        MemorySegment address = arena.allocate(SUN_PATH_OFFSET + SUN_PATH_SIZE);
        address.set(JAVA_SHORT, 0, (short) AF_UNIX);
        MemorySegment.copy(nameBytes, 0, address, JAVA_BYTE, SUN_PATH_OFFSET + 1, nameBytes.length);
        int length = SUN_PATH_OFFSET + 1 + nameBytes.length;
        Libc.call(
            arena,
            state -> (int) Connect.HANDLE.invokeExact(state, number, address, length),
            "connect",
            described);
        return new UnixSocket(fd, described);
      } catch (RuntimeException e) {
        fd.close();
        throw e;
      }
    }
  }

  /** Writes all of {@code content}. */
  public void write(byte[] content) {
    Libc.writeFully(fd, content);
  }

  /**
   * Reads exactly {@code length} bytes.
   *
   * @throws dev.caravan.storage.StorageException when the peer closes the connection first, or
   *     the timeout passes ({@code EAGAIN})
   */
  public byte[] readExactly(int length) {
    byte[] result = new byte[length];
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment buffer = arena.allocate(Math.max(1, Math.min(length, 1 << 16)));
      int done = 0;
      while (done < length) {
        MemorySegment slice = buffer.asSlice(0, Math.min(buffer.byteSize(), length - done));
        long read = Libc.read(fd, slice);
        if (read == 0) {
          throw new dev.caravan.storage.StorageException(
              name + " closed the connection after " + done + " of " + length + " bytes");
        }
        MemorySegment.copy(slice, JAVA_BYTE, 0, result, done, (int) read);
        done += (int) read;
      }
    }
    return result;
  }

  @Override
  public void close() {
    fd.close();
  }

  @Override
  public String toString() {
    return name;
  }
}
