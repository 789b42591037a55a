package dev.caravan.storage.zfs;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The pbkdf2iters a new encrypted volume may be given: OpenZFS's range, and its default. */
class Pbkdf2ItersTest {
  @Test
  void theDefaultIsOpenZfsDefaultAndTheRangeIsWhatItsToolsAccept() {
    assertThat(Pbkdf2Iters.DEFAULT.count()).isEqualTo(350_000);
    assertThat(new Pbkdf2Iters(100_000).count()).isEqualTo(100_000);
    assertThat(new Pbkdf2Iters(Integer.MAX_VALUE).count()).isEqualTo(Integer.MAX_VALUE);
  }

  @Test
  void fewerThanOpenZfsMinimumIsRefusedNamingTheRule() {
    assertThatThrownBy(() -> new Pbkdf2Iters(99_999))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("pbkdf2iters must be from 100000 (OpenZFS's minimum) to 2147483647, not 99999");
    assertThatThrownBy(() -> new Pbkdf2Iters(Integer.MAX_VALUE + 1L))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("not 2147483648");
  }
}
