package dev.caravan.csi.iscsi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;

class IscsiGcTest {
  @Test
  void onByDefaultSweepingEveryMinuteWithFiveMinutesGrace() {
    assertThat(IscsiGc.parse(null, Map.of()))
        .isEqualTo(new IscsiGc(true, Duration.ofMinutes(1), Duration.ofMinutes(5)))
        .isEqualTo(IscsiGc.DEFAULT);
  }

  @Test
  void theFlagTurnsItOffAndWinsOverTheConfigFile() {
    assertThat(IscsiGc.parse("off", Map.of()).enabled()).isFalse();
    assertThat(IscsiGc.parse(null, Map.of("iscsi-gc", "off")).enabled()).isFalse();
    assertThat(IscsiGc.parse("on", Map.of("iscsi-gc", "off")).enabled()).isTrue();
  }

  @Test
  void intervalAndGraceComeFromTheConfigFile() {
    IscsiGc gc = IscsiGc.parse(null, Map.of("iscsi-gc-interval-seconds", "30", "iscsi-gc-grace-seconds", "600"));
    assertThat(gc.interval()).isEqualTo(Duration.ofSeconds(30));
    assertThat(gc.grace()).isEqualTo(Duration.ofMinutes(10));
  }

  @Test
  void anUnknownValueIsRefusedNamingWhatIsAccepted() {
    assertThatThrownBy(() -> IscsiGc.parse("false", Map.of()))
        .isInstanceOf(IllegalArgumentException.class).hasMessage("--iscsi-gc 'false' must be on or off");
    assertThatThrownBy(() -> IscsiGc.parse(null, Map.of("iscsi-gc", "yes")))
        .hasMessage("--iscsi-gc 'yes' must be on or off");
    assertThatThrownBy(() -> IscsiGc.parse(null, Map.of("iscsi-gc-grace-seconds", "5")))
        .hasMessage("iscsi-gc-grace-seconds '5' must be a whole number of seconds from 60 to 86400");
    assertThatThrownBy(() -> IscsiGc.parse(null, Map.of("iscsi-gc-interval-seconds", "1m")))
        .hasMessageContaining("iscsi-gc-interval-seconds '1m'");
  }
}
