package dev.caravan.storage.internal.zfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

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

  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS)
  void carriesAStreamFromAChannelToAChannelUntilTheWriterCloses() throws Exception {
    byte[] data = new byte[5 * 1024 * 1024 + 17];
    new Random(1).nextBytes(data);
    try (Pipe pipe = Pipe.open()) {
      CompletableFuture<Pipe.Filled> writer =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return pipe.fillFrom(Channels.newChannel(new ByteArrayInputStream(data)));
                } catch (IOException e) {
                  throw new AssertionError(e);
                } finally {
                  pipe.closeWriteEnd();
                }
              });
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      assertThat(pipe.drainTo(Channels.newChannel(out))).isEqualTo(data.length);
      assertThat(writer.get()).isEqualTo(new Pipe.Filled(data.length, false));
      assertThat(out.toByteArray()).isEqualTo(data);
    }
  }

  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS)
  void whenTheReaderFailsAndClosesItsEndTheWriterStopsInsteadOfBlocking() throws Exception {
    byte[] data = new byte[8 * 1024 * 1024]; // far more than the pipe holds
    try (Pipe pipe = Pipe.open()) {
      CompletableFuture<Pipe.Filled> writer =
          CompletableFuture.supplyAsync(
              () -> {
                try {
                  return pipe.fillFrom(Channels.newChannel(new ByteArrayInputStream(data)));
                } catch (IOException e) {
                  throw new AssertionError(e);
                }
              });
      WritableByteChannel failing =
          new WritableByteChannel() {
            private long taken;

            @Override
            public int write(ByteBuffer source) throws IOException {
              if (taken > 100_000) {
                throw new IOException("consumer gone (test)");
              }
              taken += source.remaining();
              int length = source.remaining();
              source.position(source.limit());
              return length;
            }

            @Override
            public boolean isOpen() {
              return true;
            }

            @Override
            public void close() {}
          };
      assertThatThrownBy(() -> pipe.drainTo(failing)).hasMessage("consumer gone (test)");
      pipe.closeReadEnd();
      Pipe.Filled filled = writer.get(10, TimeUnit.SECONDS);
      assertThat(filled.readerGone()).isTrue();
      assertThat(filled.bytes()).isLessThan(data.length);
    }
  }

  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS)
  void whenTheWriterClosesEarlyTheReaderSeesTheEndOfTheStream() throws Exception {
    try (Pipe pipe = Pipe.open()) {
      Thread writer =
          Thread.ofPlatform()
              .start(
                  () -> {
                    try {
                      pipe.fillFrom(Channels.newChannel(new ByteArrayInputStream(new byte[1000])));
                    } catch (IOException e) {
                      throw new AssertionError(e);
                    } finally {
                      pipe.closeWriteEnd();
                    }
                  });
      assertThat(pipe.drainTo(Channels.newChannel(new ByteArrayOutputStream()))).isEqualTo(1000);
      writer.join(Duration.ofSeconds(10));
      assertThat(writer.isAlive()).isFalse();
    }
  }
}
