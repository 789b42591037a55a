package dev.caravan.csi.backend;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class IdRulesTest {
  @Test
  void aNamesHashIsTheFirstSixBytesOfItsUtf8Sha256InLowerCaseHex() {
    // Values from sha256sum: ids issued by every backend end in these digits, so they must not move.
    assertThat(IdRules.nameHash("mysql-data")).isEqualTo("be163047c87b");
    assertThat(IdRules.nameHash("caf\u00e9")).isEqualTo("850f7dc43910");
  }
}
