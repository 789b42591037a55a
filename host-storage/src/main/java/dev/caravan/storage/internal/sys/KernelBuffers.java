package dev.caravan.storage.internal.sys;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import dev.caravan.storage.KernelBufferOverrunError;
import dev.caravan.storage.SyscallException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The memory host-storage hands the kernel for one ioctl: each buffer is followed by a guard of
 * {@value #GUARD_SIZE} bytes holding a known pattern, and {@link #ioctl} checks every guard after
 * the call. A kernel that copies out more than the buffer we sized from its struct (a {@code
 * zfs_cmd_t} of another release, an nvlist reply larger than {@code zc_nvlist_dst_size}) would
 * otherwise corrupt whatever native memory lies next to the buffer, silently; here it ends in a
 * {@link KernelBufferOverrunError} naming the ioctl, the buffer and its size, before anything reads
 * the buffer. Confined to one thread, like the arena it owns.
 */
public final class KernelBuffers implements AutoCloseable {
  /** A page: larger than any copy-out a struct-size mismatch between releases has produced. */
  static final int GUARD_SIZE = 4096;

  private static final MemorySegment PATTERN = pattern();

  private record Guarded(String what, MemorySegment buffer, MemorySegment guard) {}

  private final Arena arena = Arena.ofConfined();
  private final List<Guarded> buffers = new ArrayList<>();

  /** A zeroed buffer of {@code layout}'s size and alignment, with a guard after it. */
  public MemorySegment allocate(String what, MemoryLayout layout) {
    return allocate(what, layout.byteSize(), Math.max(8, layout.byteAlignment()));
  }

  /** A zeroed buffer of {@code size} bytes aligned to {@code alignment}, with a guard after it. */
  public MemorySegment allocate(String what, long size, long alignment) {
    MemorySegment whole = arena.allocate(size + GUARD_SIZE, alignment); // zero-filled
    MemorySegment guard = whole.asSlice(size, GUARD_SIZE);
    guard.copyFrom(PATTERN);
    MemorySegment buffer = whole.asSlice(0, size);
    buffers.add(new Guarded(what, buffer, guard));
    return buffer;
  }

  /** Memory the kernel only reads (a packed request nvlist): no guard, the arena's lifetime. */
  public Arena arena() {
    return arena;
  }

  /**
   * {@link Libc#ioctl(Fd, Ioctl, MemorySegment)}, then the guards of every buffer allocated here;
   * a touched guard outranks the ioctl's own failure.
   */
  public void ioctl(Fd fd, Ioctl request, MemorySegment argument) {
    try {
      Libc.ioctl(fd, request, argument);
    } catch (SyscallException e) {
      verify(request);
      throw e;
    }
    verify(request);
  }

  /** Throws {@link KernelBufferOverrunError} naming {@code call} when any guard was written. */
  public void verify(Ioctl call) {
    for (Guarded g : buffers) {
      long at = g.guard().mismatch(PATTERN);
      if (at >= 0) {
        throw new KernelBufferOverrunError(
            String.format(
                "ioctl %s (request 0x%x) wrote past the end of its %s buffer of %d bytes: byte %d"
                    + " after the end changed; native memory may be corrupt, stopping",
                call.name(), call.request(), g.what(), g.buffer().byteSize(), at));
      }
    }
  }

  @Override
  public void close() {
    arena.close();
  }

  // Not one repeated byte: a kernel that writes a run of the pattern byte is still caught.
  private static MemorySegment pattern() {
    MemorySegment p = Arena.global().allocate(GUARD_SIZE);
    for (int i = 0; i < GUARD_SIZE; i++) {
      p.set(JAVA_BYTE, i, (byte) (0xA5 ^ (i * 31)));
    }
    return p.asReadOnly();
  }
}
