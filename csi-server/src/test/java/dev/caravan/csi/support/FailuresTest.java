package dev.caravan.csi.support;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class FailuresTest {
  @Test
  void aFailureIsItsMessageNeverItsClass() {
    assertThat(Failures.describe(new IllegalStateException("pool tank is exported")))
        .isEqualTo("pool tank is exported");
    assertThat(Failures.internal(new LinkageError("a class went missing")))
        .isEqualTo("internal error: a class went missing");
  }

  @Test
  void oneWithoutAMessageSaysSoAndWhereTheDetailsAre() {
    for (Throwable silent : new Throwable[] {new NullPointerException(), new java.io.EOFException(),
        new RuntimeException(" ")}) {
      assertThat(Failures.describe(silent)).as("%s", silent.getClass())
          .isEqualTo("a failure that gave no reason (the plugin's log has its stack trace)")
          .doesNotContain("Exception").doesNotContain("null");
    }
  }
}
