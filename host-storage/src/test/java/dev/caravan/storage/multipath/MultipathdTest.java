package dev.caravan.storage.multipath;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.storage.StorageException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class MultipathdTest {
  @Test
  void aRequestIsItsLengthWithTheNulThenTheTextAndANul() {
    byte[] frame = Multipathd.frame("show maps");

    ByteBuffer buffer = ByteBuffer.wrap(frame).order(ByteOrder.nativeOrder());
    assertThat(buffer.getLong()).isEqualTo(10);
    assertThat(frame).hasSize(8 + 10);
    assertThat(new String(frame, 8, 9, StandardCharsets.UTF_8)).isEqualTo("show maps");
    assertThat(frame[frame.length - 1]).isZero();
  }

  @Test
  void aReplyEndsAtItsNul() {
    assertThat(Multipathd.text("ok\n\0".getBytes(StandardCharsets.UTF_8))).isEqualTo("ok\n");
    assertThat(Multipathd.text("fail".getBytes(StandardCharsets.UTF_8))).isEqualTo("fail");
  }

  @Test
  void noDaemonIsAClearErrorNotAHang() {
    Multipathd nobody = new Multipathd("/dev/caravan/test/nobody-listens-here", Duration.ofSeconds(1));

    assertThatThrownBy(() -> nobody.send("show maps"))
        .isInstanceOf(StorageException.class)
        .hasMessageContaining("cannot reach multipathd at @/dev/caravan/test/nobody-listens-here")
        .hasMessageContaining("ECONNREFUSED");
  }
}
