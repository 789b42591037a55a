package dev.caravan.storage.iscsi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class PathTimeoutsTest {
  @Test
  void theDefaultFailsOverWellBeforeOpenIscsisTwoMinutes() {
    assertThat(Iscsi.system().pathTimeouts()).isEqualTo(PathTimeouts.MULTIPATH);
    assertThat(PathTimeouts.MULTIPATH.replacementTimeout()).isEqualTo(Duration.ofSeconds(15));
    assertThat(PathTimeouts.MULTIPATH.noopOutInterval()).isEqualTo(Duration.ofSeconds(5));
    assertThat(PathTimeouts.MULTIPATH.noopOutTimeout()).isEqualTo(Duration.ofSeconds(10));
  }

  @Test
  void theChoiceTravelsWithTheObject() {
    PathTimeouts mine = new PathTimeouts(Duration.ofSeconds(5), Duration.ZERO, Duration.ZERO);
    Iscsi iscsi = Iscsi.system().withPathTimeouts(mine);

    assertThat(iscsi.pathTimeouts()).isEqualTo(mine);
    assertThat(iscsi.withTimeout(Duration.ofSeconds(5)).pathTimeouts()).isEqualTo(mine);
    assertThat(iscsi.through("default").pathTimeouts()).isEqualTo(mine);
  }

  @Test
  void onlyWholeNonNegativeSecondsAndAPingThatIsWaitedFor() {
    assertThatThrownBy(() -> new PathTimeouts(Duration.ofMillis(1500), Duration.ofSeconds(5), Duration.ofSeconds(5)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("replacementTimeout must be a whole number of seconds");
    assertThatThrownBy(() -> new PathTimeouts(Duration.ofSeconds(15), Duration.ofSeconds(-1), Duration.ofSeconds(5)))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("noopOutInterval");
    assertThatThrownBy(() -> new PathTimeouts(Duration.ofSeconds(15), Duration.ofSeconds(5), Duration.ZERO))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("noopOutTimeout must be positive when noopOutInterval is");
    assertThatThrownBy(() -> new PathTimeouts(null, Duration.ofSeconds(5), Duration.ofSeconds(5)))
        .isInstanceOf(NullPointerException.class)
        .hasMessageContaining("replacementTimeout");
  }
}
