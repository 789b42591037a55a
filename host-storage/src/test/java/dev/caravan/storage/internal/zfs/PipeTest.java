package dev.caravan.storage.internal.zfs;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

class PipeTest {
  @Test
  void opensTwoCloseOnExecEndsAndClosesEachOnce() throws Exception {
    Pipe pipe = Pipe.open();
    Path read = Path.of("/proc/self/fd/" + pipe.readFd());
    Path write = Path.of("/proc/self/fd/" + pipe.writeFd());
    assertThat(Files.readSymbolicLink(read).toString()).startsWith("pipe:");
    assertThat(Files.readSymbolicLink(write)).isEqualTo(Files.readSymbolicLink(read));
    String flags = Files.readString(Path.of("/proc/self/fdinfo/" + pipe.readFd()));
    // O_CLOEXEC is 02000000 in the octal "flags:" line of fdinfo
    String octal = flags.lines().filter(l -> l.startsWith("flags:")).findFirst().orElseThrow();
    assertThat(Long.parseLong(octal.substring(6).trim(), 8) & 02000000).isNotZero();

    pipe.closeWriteEnd();
    pipe.closeWriteEnd();
    assertThat(Files.exists(write, java.nio.file.LinkOption.NOFOLLOW_LINKS)).isFalse();
    pipe.close();
    assertThat(Files.exists(read, java.nio.file.LinkOption.NOFOLLOW_LINKS)).isFalse();
  }
}
