package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.observe.metrics.Metrics;
import java.net.InetSocketAddress;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Refusals are counted every time and logged once per reason and peer host a minute, saying how many were left out. */
class RefusalLogTest {
  /** A clock the test moves. */
  private static final class Manual extends Clock {
    Instant now = Instant.parse("2030-01-01T00:00:00Z");

    @Override
    public Instant instant() {
      return now;
    }

    @Override
    public java.time.ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(java.time.ZoneId zone) {
      return this;
    }
  }

  @Test
  void oneLinePerReasonAndHostAMinuteWithTheCountLeftOut() {
    Manual clock = new Manual();
    List<String> counted = new ArrayList<>();
    Metrics metrics = new Metrics() {
      @Override
      public boolean enabled() {
        return true;
      }

      @Override
      public void rpc(String method, String code, long nanos) {}

      @Override
      public void backendOperation(String backend, String op, String outcome, long nanos) {}

      @Override
      public void peerRefusal(String reason) {
        counted.add(reason);
      }
    };
    RefusalLog refusals = new RefusalLog("n1", metrics, clock);
    try (CapturedLog log = new CapturedLog()) {
      for (int port = 40000; port < 40004; port++) {
        refusals.refused(RefusalReason.PLAINTEXT, new InetSocketAddress("10.0.0.9", port), "", List.of(), "");
      }
      refusals.refused(RefusalReason.UNKNOWN_CA, new InetSocketAddress("10.0.0.9", 40010), "CN=x", List.of("x"), "");
      refusals.refused(RefusalReason.PLAINTEXT, new InetSocketAddress("10.0.0.8", 40020), "", List.of(), "");
      assertThat(log.matching("node n1 refused peer 10.0.0.9:40000", "plain text")).hasSize(1);
      assertThat(log.matching("10.0.0.9", "plain text")).hasSize(1);
      assertThat(log.matching("node n1 refused peer 10.0.0.9:40010", "CN=x", "[x]", "does not chain")).hasSize(1);
      assertThat(log.matching("node n1 refused peer 10.0.0.8:40020", "plain text")).hasSize(1);

      clock.now = clock.now.plus(Duration.ofSeconds(61));
      refusals.refused(RefusalReason.PLAINTEXT, new InetSocketAddress("10.0.0.9", 40030), "", List.of(), "");
      assertThat(log.matching("node n1 refused peer 10.0.0.9:40030", "plain text",
          "3 more refusal(s) of 10.0.0.9 for this reason")).hasSize(1);
    }
    assertThat(counted).hasSize(7).filteredOn("plaintext"::equals).hasSize(6);
  }
}
