package dev.caravan.storage.internal.sys;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.SyscallException;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * A pseudo-terminal for one child process: the terminal end becomes the child's console, and we
 * type at and read from the master end.
 *
 * <p>The terminal end is never opened by name: it comes from the master ({@code TIOCGPTPEER}), with
 * {@code O_NOCTTY}, as the master comes from {@code /dev/ptmx}. A process that leads its session
 * without a controlling terminal (a JVM started by {@code setsid}, or as a container's first
 * process, can) and opens a terminal for reading without {@code O_NOCTTY} gets it as its
 * controlling terminal; that terminal hangs up when the master is closed, and the kernel then sends
 * SIGHUP to the session leader. {@link java.lang.ProcessBuilder.Redirect#from} opens its file
 * exactly so.
 */
public final class Pty implements AutoCloseable {
  private static final int O_NOCTTY = 0400; // asm-generic/fcntl.h
  // struct termios as the kernel's TCGETS fills it: c_iflag, c_oflag, c_cflag, c_lflag (4 bytes
  // each), c_line, c_cc[19].
  private static final int TERMIOS_SIZE = 36;
  private static final long C_OFLAG = 4;
  private static final long C_LFLAG = 12;
  private static final int OPOST = 0x1;
  private static final int ECHO = 0x8;
  // VEOF's default character, ^D: at the start of a line it makes the reader's read return 0.
  private static final String END_OF_INPUT = "\u0004";
  // Typed input waits in the terminal's input buffer (4 KiB) until the child reads it.
  private static final int MAX_TYPED = 1024;
  private static final int READ_CHUNK = 16 * 1024;

  private final Fd master;
  private final Fd terminal;
  private boolean terminalClosed;

  private Pty(Fd master, Fd terminal) {
    this.master = master;
    this.terminal = terminal;
  }

  /**
   * A new pseudo-terminal that neither echoes input nor rewrites output (no {@code \n} to {@code
   * \r\n}), so what is read from the master is exactly what the child wrote.
   */
  public static Pty open() {
    Fd master = Libc.open(Path.of("/dev/ptmx"), LinuxUapi.O_RDWR() | O_NOCTTY);
    try (Arena arena = Arena.ofConfined()) {
      Libc.ioctl(master, Ioctl.TIOCSPTLCK, arena.allocateFrom(JAVA_INT, 0)); // unlock
      int flags = LinuxUapi.O_RDWR() | O_NOCTTY | LinuxUapi.O_CLOEXEC();
      Fd terminal = new Fd((int) Libc.ioctl(master, Ioctl.TIOCGPTPEER, flags), "pty terminal");
      try {
        plain(terminal);
      } catch (RuntimeException e) {
        terminal.close();
        throw e;
      }
      return new Pty(master, terminal);
    } catch (RuntimeException e) {
      master.close();
      throw e;
    }
  }

  private static void plain(Fd terminal) {
    try (KernelBuffers buffers = new KernelBuffers()) {
      MemorySegment termios = buffers.allocate("termios", TERMIOS_SIZE, 4);
      buffers.ioctl(terminal, Ioctl.TCGETS, termios);
      termios.set(JAVA_INT, C_OFLAG, termios.get(JAVA_INT, C_OFLAG) & ~OPOST);
      termios.set(JAVA_INT, C_LFLAG, termios.get(JAVA_INT, C_LFLAG) & ~ECHO);
      buffers.ioctl(terminal, Ioctl.TCSETS, termios);
    }
  }

  /** The end to hand to the child as its standard input, output and error. */
  public Fd terminal() {
    return terminal;
  }

  /**
   * Types {@code text} at the terminal, then end-of-input: once the child has read {@code text},
   * its next read returns end-of-file instead of waiting for more.
   */
  public void type(String text) {
    if (text.length() > MAX_TYPED) {
      throw new IllegalArgumentException("at most " + MAX_TYPED + " characters can be typed ahead");
    }
    // A partial line needs one end-of-input to be delivered, and another to read as end-of-file.
    String end = text.isEmpty() || text.endsWith("\n") ? END_OF_INPUT : END_OF_INPUT.repeat(2);
    Libc.writeFully(master, (text + end).getBytes(StandardCharsets.UTF_8));
  }

  /** Closes our copy of the terminal end, once the child has its own. */
  public void closeTerminal() {
    if (!terminalClosed) {
      terminalClosed = true;
      terminal.close();
    }
  }

  /**
   * Everything the child writes, until no process has the terminal end open any more (the master
   * then reads EIO). Close our copy of the terminal end first, or this never returns.
   */
  public String readUntilHangup() {
    ByteArrayOutputStream output = new ByteArrayOutputStream();
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment buffer = arena.allocate(READ_CHUNK);
      while (true) {
        long read;
        try {
          read = Libc.read(master, buffer);
        } catch (SyscallException e) {
          if (e.errno() == Errno.EIO) {
            break;
          }
          throw e;
        }
        if (read == 0) {
          break;
        }
        output.writeBytes(buffer.asSlice(0, read).toArray(JAVA_BYTE));
      }
    }
    return output.toString(StandardCharsets.UTF_8);
  }

  @Override
  public void close() {
    closeTerminal();
    master.close();
  }
}
