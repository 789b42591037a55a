package dev.caravan.storage.iscsi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class ChapTest {
  @Test
  void printsTheUsersNeverTheSecrets() {
    Chap oneWay = Chap.oneWay("alice", "very-secret-1");
    Chap mutual = Chap.mutual("alice", "very-secret-1", "nas", "nas-secret-22");

    assertThat(oneWay).hasToString("CHAP as alice");
    assertThat(mutual.toString()).isEqualTo("mutual CHAP as alice, target nas");
    assertThat(mutual.toString()).doesNotContain("very-secret-1", "nas-secret-22");
    assertThat(mutual.isMutual()).isTrue();
    assertThat(oneWay.isMutual()).isFalse();
  }

  @Test
  void refusesValuesThatWouldBreakOrChangeTheNodeRecordLine() {
    assertThatThrownBy(() -> Chap.oneWay("alice", "line\nnode.startup = automatic"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("CHAP secret must not contain control characters");
    assertThatThrownBy(() -> Chap.oneWay("alice", " padded "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("CHAP secret must not start or end with blanks");
    assertThatThrownBy(() -> Chap.oneWay("", "secret")).isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Chap.oneWay("alice", "x".repeat(256)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Chap.mutual("alice", "secret", "nas", "\0"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageNotContaining("\0");
  }
}
