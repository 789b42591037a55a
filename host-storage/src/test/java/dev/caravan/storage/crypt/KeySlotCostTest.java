package dev.caravan.storage.crypt;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The work a new LUKS2 key slot may be asked for: libcryptsetup's limits, and the default. */
class KeySlotCostTest {
  @Test
  void theDefaultIsOneSecondWithin256MiBAndFourThreads() {
    assertThat(KeySlotCost.DEFAULT)
        .isEqualTo(new KeySlotCost(Duration.ofSeconds(1), 256 * 1024, 4));
    assertThat(KeySlotCost.iterTime(Duration.ofMillis(5)))
        .isEqualTo(new KeySlotCost(Duration.ofMillis(5), 256 * 1024, 4));
  }

  @Test
  void anIterationTimeOutsideOneMillisecondToAMinuteIsRefusedNamingTheRule() {
    assertThat(KeySlotCost.iterTime(Duration.ofMillis(1)).iterTime()).hasMillis(1);
    assertThat(KeySlotCost.iterTime(Duration.ofMinutes(1)).iterTime()).hasMillis(60_000);
    for (Duration bad : new Duration[] {Duration.ZERO, Duration.ofMillis(-1), Duration.ofMillis(60_001),
        Duration.ofNanos(1_500_000)}) {
      assertThatThrownBy(() -> KeySlotCost.iterTime(bad))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith(
              "the LUKS2 iteration time must be a whole number of milliseconds from 1 to 60000");
    }
  }

  @Test
  void eachPartChangesAloneAndTheOthersAreKept() {
    KeySlotCost small = KeySlotCost.DEFAULT.withMemoryKiB(KeySlotCost.MIN_MEMORY_KIB);
    assertThat(small).isEqualTo(new KeySlotCost(Duration.ofSeconds(1), 32, 4));
    assertThat(small.withIterTime(Duration.ofMillis(3))).isEqualTo(new KeySlotCost(Duration.ofMillis(3), 32, 4));
    assertThatThrownBy(() -> KeySlotCost.DEFAULT.withMemoryKiB(KeySlotCost.MAX_MEMORY_KIB + 1))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("from 32 to 4194304 KiB");
  }

  @Test
  void memoryAndThreadsOutsideLibcryptsetupsLimitsAreRefused() {
    assertThatThrownBy(() -> new KeySlotCost(Duration.ofSeconds(1), 31, 4))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("from 32 to 4194304 KiB");
    assertThatThrownBy(() -> new KeySlotCost(Duration.ofSeconds(1), 1024, 5))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("threads must be from 1 to 4");
  }
}
