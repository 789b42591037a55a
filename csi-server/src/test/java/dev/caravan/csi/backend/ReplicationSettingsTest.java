package dev.caravan.csi.backend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ReplicationSettingsTest {
  private static CsiException refused(Map<String, String> parameters) {
    try {
      ReplicationSettings.parse(parameters);
    } catch (CsiException e) {
      assertThat(e.kind()).isEqualTo(CsiException.Kind.INVALID_ARGUMENT);
      return e;
    }
    throw new AssertionError("accepted " + parameters);
  }

  @Test
  void noReplicasIsTheDefaultAndReplicasAloneTakeTheDefaultInterval() {
    assertThat(ReplicationSettings.parse(Map.of())).isEqualTo(ReplicationSettings.NONE);
    assertThat(ReplicationSettings.parse(Map.of("replicas", "0"))).isEqualTo(ReplicationSettings.NONE);
    ReplicationSettings one = ReplicationSettings.parse(Map.of("replicas", "1"));
    assertThat(one.on()).isTrue();
    assertThat(one.interval()).isEqualTo(Duration.ofMinutes(1));
    assertThat(one.nodes()).isEmpty();
  }

  @Test
  void intervalsAreSecondsMinutesOrHoursOfAtLeastFiveSeconds() {
    assertThat(ReplicationSettings.parse(Map.of("replicas", "1", "replicationInterval", "30s")).interval())
        .isEqualTo(Duration.ofSeconds(30));
    assertThat(ReplicationSettings.parse(Map.of("replicas", "1", "replicationInterval", "5s")).interval())
        .isEqualTo(Duration.ofSeconds(5));
    assertThat(ReplicationSettings.parse(Map.of("replicas", "1", "replicationInterval", "2h")).interval())
        .isEqualTo(Duration.ofHours(2));
    for (String bad : List.of("4s", "0m", "1d", "1.5m", "", "m", "-1s", "10")) {
      assertThat(refused(Map.of("replicas", "1", "replicationInterval", bad)).getMessage())
          .contains("parameters.replicationInterval").contains("at least 5s");
    }
  }

  @Test
  void replicasAreAWholeNumberAndTheOtherKeysNeedSome() {
    for (String bad : List.of("-1", "one", "1.0", "17", "")) {
      assertThat(refused(Map.of("replicas", bad)).getMessage()).contains("parameters.replicas");
    }
    assertThat(refused(Map.of("replicationInterval", "30s")).getMessage())
        .contains("parameters.replicationInterval applies only to a replicated volume");
    assertThat(refused(Map.of("replicas", "0", "replicaNodes", "n2")).getMessage())
        .contains("parameters.replicaNodes applies only to a replicated volume");
  }

  @Test
  void replicaNodesAreDistinctNodeIdsAsManyAsTheReplicas() {
    assertThat(ReplicationSettings.parse(Map.of("replicas", "2", "replicaNodes", "n2, n3")).nodes())
        .containsExactly("n2", "n3");
    assertThat(refused(Map.of("replicas", "2", "replicaNodes", "n2")).getMessage())
        .contains("parameters.replicaNodes names 1 node(s); parameters.replicas asks for 2");
    assertThat(refused(Map.of("replicas", "2", "replicaNodes", "n2,n2")).getMessage()).contains("twice");
    assertThat(refused(Map.of("replicas", "1", "replicaNodes", "a/b")).getMessage()).contains("is not a node id");
  }

  @Test
  void theNodesMustBeKnownPeersOtherThanTheOwnerAndEnough() {
    ReplicationSettings two = ReplicationSettings.parse(Map.of("replicas", "2"));
    assertThatThrownBy(() -> two.requireNodes("n1", Set.of("n2")))
        .hasMessageContaining("parameters.replicas 2 is more than the other nodes there are (1: n2)");
    ReplicationSettings own = ReplicationSettings.parse(Map.of("replicas", "1", "replicaNodes", "n1"));
    assertThatThrownBy(() -> own.requireNodes("n1", Set.of("n2")))
        .hasMessageContaining("parameters.replicaNodes names node n1, which holds the volume itself");
    ReplicationSettings stranger = ReplicationSettings.parse(Map.of("replicas", "1", "replicaNodes", "n9"));
    assertThatThrownBy(() -> stranger.requireNodes("n1", Set.of("n2")))
        .hasMessageContaining("parameters.replicaNodes names node n9, which is not a known peer; known: n2");
    ReplicationSettings.parse(Map.of("replicas", "1", "replicaNodes", "n2")).requireNodes("n1", Set.of("n2"));
  }
}
