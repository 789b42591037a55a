package dev.caravan.storage.internal.zfs;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.caravan.bindings.NativeLibraries;
import dev.caravan.storage.internal.sys.KernelBuffers;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How a reply nvlist is read back from the buffer given to the kernel, without a kernel. */
class ZfsIoctlsTest {
  @Test
  void aReplyTheKernelClaimsIsLargerThanItsBufferIsRefusedNotRead() {
    try (Arena arena = Arena.ofConfined();
        KernelBuffers buffers = new KernelBuffers()) {
      MemorySegment buffer = arena.allocate(64, 8);
      ZfsCommand zc = ZfsCommand.allocate(buffers).destination(buffer);
      kernelReplied(zc, 65);
      assertThatThrownBy(() -> ZfsIoctls.reply(zc, buffer))
          .isInstanceOf(IllegalStateException.class)
          .hasMessage("the kernel reported a reply of 65 bytes in a buffer of 64: refusing to read"
              + " past the buffer");
      kernelReplied(zc, -1);
      assertThatThrownBy(() -> ZfsIoctls.reply(zc, buffer))
          .hasMessageContaining("reply of 18446744073709551615 bytes");
    }
  }

  @Test
  void anUnfilledReplyIsEmpty() {
    try (Arena arena = Arena.ofConfined();
        KernelBuffers buffers = new KernelBuffers()) {
      MemorySegment buffer = arena.allocate(64, 8);
      ZfsCommand zc = ZfsCommand.allocate(buffers).destination(buffer);
      assertThat(ZfsIoctls.reply(zc, buffer)).isEmpty();
    }
  }

  @Test
  void aReplyWithinItsBufferIsUnpackedFromExactlyItsBytes() {
    assumeTrue(NativeLibraries.isAvailable(NativeLibraries.Library.ZFS_CORE), "needs libnvpair");
    try (Arena arena = Arena.ofConfined();
        KernelBuffers buffers = new KernelBuffers();
        NvList list = NvList.of(Map.of("name", "tank/vol", "size", 42L))) {
      MemorySegment packed = list.pack(arena);
      MemorySegment buffer = arena.allocate(packed.byteSize() + 1024, 8);
      buffer.copyFrom(packed);
      ZfsCommand zc = ZfsCommand.allocate(buffers).destination(buffer);
      kernelReplied(zc, packed.byteSize());
      assertThat(ZfsIoctls.reply(zc, buffer)).isEqualTo(Map.of("name", "tank/vol", "size", 42L));
    }
  }

  /** What the kernel's put_nvlist leaves in the command: the reply's size, and the filled flag. */
  private static void kernelReplied(ZfsCommand zc, long size) {
    zc.segment().set(JAVA_LONG, ZfsCommand.NVLIST_DST_SIZE, size);
    zc.segment().set(JAVA_INT, ZfsCommand.NVLIST_DST_FILLED, 1);
  }
}
