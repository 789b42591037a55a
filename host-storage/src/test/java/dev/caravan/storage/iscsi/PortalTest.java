package dev.caravan.storage.iscsi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class PortalTest {
  @Test
  void parsesAddressesWithAndWithoutPorts() {
    assertThat(Portal.parse("192.0.2.10")).isEqualTo(new Portal("192.0.2.10", 3260));
    assertThat(Portal.parse("192.0.2.10:3261")).isEqualTo(new Portal("192.0.2.10", 3261));
    assertThat(Portal.parse("[2001:db8::1]")).isEqualTo(new Portal("2001:db8::1", 3260));
    assertThat(Portal.parse("[2001:db8::1]:3262")).isEqualTo(new Portal("2001:db8::1", 3262));
    assertThat(Portal.parse("2001:db8::1")).isEqualTo(new Portal("2001:db8::1", 3260));
  }

  @Test
  void printsWhatIscsiadmTakes() {
    assertThat(Portal.parse("192.0.2.10")).hasToString("192.0.2.10:3260");
    assertThat(Portal.parse("[2001:db8::1]:3262")).hasToString("[2001:db8::1]:3262");
  }

  @Test
  void refusesHostNamesAndBadPorts() {
    assertThatThrownBy(() -> Portal.parse("nas.example.com:3260"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("IPv4 or IPv6 literal");
    assertThatThrownBy(() -> Portal.parse("192.0.2.10:0")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Portal.parse("192.0.2.10:99999")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Portal.parse("192.0.2.10:x")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Portal.parse("256.0.2.10")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Portal.parse("[2001:db8::1")).isInstanceOf(IllegalArgumentException.class);
  }
}
