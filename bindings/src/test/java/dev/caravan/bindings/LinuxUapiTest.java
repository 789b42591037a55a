package dev.caravan.bindings;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.bindings.linux.loop_config;
import dev.caravan.bindings.linux.loop_info64;
import dev.caravan.bindings.linux.statvfs;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/** Layouts and constants against the x86_64 Linux ABI. */
class LinuxUapiTest {

  @Test
  void structSizesMatchTheKernelAbi() {
    assertThat(loop_info64.layout().byteSize()).isEqualTo(232);
    assertThat(loop_config.layout().byteSize()).isEqualTo(304);
    assertThat(statvfs.layout().byteSize()).isEqualTo(112);
  }

  @Test
  void fieldOffsetsMatchTheKernelAbi() {
    assertThat(loop_config.info$offset()).isEqualTo(8);
    assertThat(loop_info64.lo_flags$offset()).isEqualTo(52);
    assertThat(loop_info64.lo_file_name$offset()).isEqualTo(56);
    assertThat(loop_info64.lo_file_name$dimensions()).containsExactly(LinuxUapi.LO_NAME_SIZE());
    assertThat(statvfs.f_bsize$offset()).isZero();
    assertThat(statvfs.f_blocks$offset()).isEqualTo(16);
    assertThat(statvfs.f_flag$offset()).isEqualTo(72);
  }

  @Test
  void ioctlNumbersAreEvaluated() {
    assertThat(LinuxUapi.LOOP_SET_FD()).isEqualTo(0x4C00);
    assertThat(LinuxUapi.LOOP_CLR_FD()).isEqualTo(0x4C01);
    assertThat(LinuxUapi.LOOP_SET_STATUS64()).isEqualTo(0x4C04);
    assertThat(LinuxUapi.LOOP_GET_STATUS64()).isEqualTo(0x4C05);
    assertThat(LinuxUapi.LOOP_SET_CAPACITY()).isEqualTo(0x4C07);
    assertThat(LinuxUapi.LOOP_CONFIGURE()).isEqualTo(0x4C0A);
    assertThat(LinuxUapi.LOOP_CTL_GET_FREE()).isEqualTo(0x4C82);
    assertThat(LinuxUapi.BLKRRPART()).isEqualTo(0x125F);
    assertThat(LinuxUapi.BLKSSZGET()).isEqualTo(0x1268);
    // _IOR/_IOWR expansions with the direction bit set come out as long.
    assertThat(LinuxUapi.BLKGETSIZE64()).isEqualTo(0x80081272L);
    assertThat(LinuxUapi.FIFREEZE()).isEqualTo(0xC0045877L);
    assertThat(LinuxUapi.FITHAW()).isEqualTo(0xC0045878L);
    assertThat(LinuxUapi.FICLONE()).isEqualTo(0x40049409L);
  }

  @Test
  void flagConstantsMatchGlibc() {
    assertThat(LinuxUapi.LO_FLAGS_READ_ONLY()).isEqualTo(1);
    assertThat(LinuxUapi.LO_FLAGS_AUTOCLEAR()).isEqualTo(4);
    assertThat(LinuxUapi.LO_FLAGS_DIRECT_IO()).isEqualTo(16);
    assertThat(LinuxUapi.LO_NAME_SIZE()).isEqualTo(64);
    assertThat(LinuxUapi.MS_RDONLY()).isEqualTo(1);
    assertThat(LinuxUapi.MS_BIND()).isEqualTo(4096);
    assertThat(LinuxUapi.MS_REC()).isEqualTo(16384);
    assertThat(LinuxUapi.MS_PRIVATE()).isEqualTo(1 << 18);
    assertThat(LinuxUapi.MS_SHARED()).isEqualTo(1 << 20);
    assertThat(LinuxUapi.MS_LAZYTIME()).isEqualTo(1 << 25);
    assertThat(LinuxUapi.MNT_DETACH()).isEqualTo(2);
    assertThat(LinuxUapi.UMOUNT_NOFOLLOW()).isEqualTo(8);
    assertThat(LinuxUapi.O_CLOEXEC()).isEqualTo(0x80000);
    assertThat(LinuxUapi.O_PATH()).isEqualTo(0x200000);
    assertThat(LinuxUapi.O_DIRECTORY()).isEqualTo(0x10000);
    assertThat(LinuxUapi.SEEK_DATA()).isEqualTo(3);
    assertThat(LinuxUapi.SEEK_HOLE()).isEqualTo(4);
    assertThat(LinuxUapi.FALLOC_FL_PUNCH_HOLE()).isEqualTo(2);
  }

  @Test
  void structAccessorsReadAndWrite() {
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment config = loop_config.allocate(arena);
      loop_config.fd(config, 7);
      loop_config.block_size(config, 4096);
      MemorySegment info = loop_config.info(config);
      loop_info64.lo_flags(info, LinuxUapi.LO_FLAGS_AUTOCLEAR() | LinuxUapi.LO_FLAGS_DIRECT_IO());
      loop_info64.lo_file_name(info).setString(0, "/var/lib/caravan/volume.img");

      assertThat(config.get(ValueLayout.JAVA_INT, 0)).isEqualTo(7);
      assertThat(config.get(ValueLayout.JAVA_INT, 8 + 52)).isEqualTo(20);
      assertThat(config.getString(8 + 56)).isEqualTo("/var/lib/caravan/volume.img");
    }
  }
}
