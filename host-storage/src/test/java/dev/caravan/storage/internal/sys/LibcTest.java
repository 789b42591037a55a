package dev.caravan.storage.internal.sys;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.bindings.linux.LinuxUapi;
import dev.caravan.bindings.linux.loop_config;
import dev.caravan.bindings.linux.loop_info64;
import dev.caravan.bindings.linux.statvfs;
import dev.caravan.storage.SyscallException;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class LibcTest {
  @Test
  void structLayoutsHaveTheKernelsSizes() {
    assertThat(loop_config.layout().byteSize()).isEqualTo(304);
    assertThat(loop_info64.layout().byteSize()).isEqualTo(232);
    assertThat(statvfs.layout().byteSize()).isEqualTo(112);
    assertThat(Stat.LAYOUT.byteSize()).isEqualTo(144);
  }

  @Test
  void errnoNames() {
    assertThat(Errno.name(1)).isEqualTo("EPERM");
    assertThat(Errno.name(16)).isEqualTo("EBUSY");
    assertThat(Errno.name(30)).isEqualTo("EROFS");
    assertThat(Errno.name(42)).isEqualTo("ENOMSG");
    assertThat(Errno.name(59)).isEqualTo("EBFONT");
    assertThat(Errno.name(95)).isEqualTo("EOPNOTSUPP");
    assertThat(Errno.name(133)).isEqualTo("EHWPOISON");
    assertThat(Errno.name(41)).isEqualTo("errno 41");
    assertThat(Errno.name(0)).isEqualTo("errno 0");
    assertThat(Errno.name(4242)).isEqualTo("errno 4242");
    assertThat(Errno.name(Errno.ENXIO)).isEqualTo("ENXIO");
    assertThat(Errno.name(Errno.EOPNOTSUPP)).isEqualTo("EOPNOTSUPP");
  }

  @Test
  void aFailedCallNamesItsErrnoOperationAndArguments() {
    Path missing = Path.of("/no/such/file");

    assertThatThrownBy(() -> Libc.open(missing, LinuxUapi.O_RDONLY()))
        .isInstanceOfSatisfying(
            SyscallException.class,
            e -> {
              assertThat(e.errno()).isEqualTo(Errno.ENOENT);
              assertThat(e.errnoName()).isEqualTo("ENOENT");
              assertThat(e.operation()).isEqualTo("open");
              assertThat(e.arguments()).containsExactly("/no/such/file", "0x0");
              assertThat(e)
                  .hasMessage(
                      "open(/no/such/file, 0x0) failed: ENOENT (No such file or directory)");
            });
  }

  @Test
  void anIoctlTheFileDoesNotKnowIsENOTTY() {
    try (Fd fd = Libc.open(Path.of("/proc/self/status"), LinuxUapi.O_RDONLY())) {
      assertThatThrownBy(() -> Libc.ioctlReadLong(fd, Ioctl.BLKGETSIZE64))
          .isInstanceOfSatisfying(
              SyscallException.class,
              e -> {
                assertThat(e.errnoName()).isEqualTo("ENOTTY");
                assertThat(e.arguments()).containsExactly("/proc/self/status", "BLKGETSIZE64");
              });
    }
  }
}
