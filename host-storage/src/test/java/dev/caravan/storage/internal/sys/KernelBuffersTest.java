package dev.caravan.storage.internal.sys;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.storage.KernelBufferOverrunError;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The guard after every buffer handed to the kernel for an ioctl. */
class KernelBuffersTest {
  private static final int O_NOCTTY = 0400;

  @Test
  void aBufferIsExactlyTheSizeAskedForZeroedAndAligned() {
    try (KernelBuffers buffers = new KernelBuffers()) {
      MemorySegment b = buffers.allocate("zfs_cmd_t", 13744, 8);
      assertThat(b.byteSize()).isEqualTo(13744);
      assertThat(b.address() % 8).isZero();
      assertThat(b.mismatch(MemorySegment.ofArray(new byte[13744]))).isEqualTo(-1);
      b.fill((byte) 0x7f); // the whole buffer is the kernel's to write
      buffers.verify(Ioctl.BLKGETSIZE64);
    }
  }

  @Test
  void aWriteOneBytePastTheEndIsCaughtAndNamesTheCallAndTheBuffer() {
    try (KernelBuffers buffers = new KernelBuffers()) {
      buffers.allocate("zfs_cmd_t", 64, 8);
      MemorySegment reply = buffers.allocate("zc_nvlist_dst", 100, 8);
      // What a kernel copying out 101 bytes does: the byte after the buffer, reached through the
      // raw address as the kernel reaches it.
      MemorySegment.ofAddress(reply.address()).reinterpret(101).set(JAVA_BYTE, 100, (byte) 0);
      Ioctl objsetStats = new Ioctl("ZFS_IOC_OBJSET_STATS", 0x5a12);
      assertThatThrownBy(() -> buffers.verify(objsetStats))
          .isInstanceOf(KernelBufferOverrunError.class)
          .isInstanceOf(VirtualMachineError.class)
          .hasMessage("ioctl ZFS_IOC_OBJSET_STATS (request 0x5a12) wrote past the end of its"
              + " zc_nvlist_dst buffer of 100 bytes: byte 0 after the end changed; native memory"
              + " may be corrupt, stopping");
    }
  }

  @Test
  void aWriteAtTheFarEndOfTheGuardIsCaught() {
    try (KernelBuffers buffers = new KernelBuffers()) {
      MemorySegment b = buffers.allocate("loop_info64", 232, 8);
      MemorySegment.ofAddress(b.address()).reinterpret(232 + KernelBuffers.GUARD_SIZE)
          .set(JAVA_LONG, 232 + KernelBuffers.GUARD_SIZE - 8, 0L);
      assertThatThrownBy(() -> buffers.verify(Ioctl.LOOP_GET_STATUS64))
          .isInstanceOf(KernelBufferOverrunError.class)
          .hasMessageContaining("LOOP_GET_STATUS64")
          .hasMessageContaining("loop_info64 buffer of 232 bytes: byte 4088 after the end");
    }
  }

  /**
   * A real kernel overrun: TCGETS copies out a 36-byte struct termios, here into a buffer of 4.
   * The guard catches it, and outranks nothing: the ioctl itself succeeded.
   */
  @Test
  void theKernelCopyingOutMoreThanTheBufferIsCaught() {
    assumeTrue(Files.exists(Path.of("/dev/ptmx")), "needs /dev/ptmx");
    try (Fd master = Libc.open(Path.of("/dev/ptmx"), LinuxUapi.O_RDWR() | O_NOCTTY);
        KernelBuffers buffers = new KernelBuffers()) {
      MemorySegment tooSmall = buffers.allocate("termios", 4, 4);
      assertThatThrownBy(() -> buffers.ioctl(master, Ioctl.TCGETS, tooSmall))
          .isInstanceOf(KernelBufferOverrunError.class)
          .hasMessageStartingWith("ioctl TCGETS (request 0x5401) wrote past the end of its termios"
              + " buffer of 4 bytes");
    }
    try (Fd master = Libc.open(Path.of("/dev/ptmx"), LinuxUapi.O_RDWR() | O_NOCTTY);
        KernelBuffers buffers = new KernelBuffers()) {
      MemorySegment termios = buffers.allocate("termios", 36, 4); // what the kernel writes
      buffers.ioctl(master, Ioctl.TCGETS, termios);
    }
  }
}
