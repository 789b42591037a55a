package dev.caravan.csi.peer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Topology;
import dev.caravan.csi.peer.v1.PlacementReport;
import java.util.List;
import org.junit.jupiter.api.Test;

class PlacementTest {
  private static PlacementReport report(String node, long free, int volumes) {
    return PlacementReport.newBuilder().setNode(node).setFreeBytes(free).setVolumes(volumes).build();
  }

  private final List<PlacementReport> reports =
      List.of(report("n1", 100, 5), report("n2", 300, 9), report("n3", 300, 2), report("n4", 50, 0));

  @Test
  void mostFreeBytesWinsAndTiesGoToFewestVolumes() {
    assertThat(Placement.choose(reports, List.of(), 0)).isEqualTo("n3");
  }

  @Test
  void onlyNodesTheRequisiteTopologyAdmitsAreCandidates() {
    assertThat(Placement.choose(reports, List.of(Topology.ofNode("n1"), Topology.ofNode("n4")), 0)).isEqualTo("n1");
    assertThatThrownBy(() -> Placement.choose(reports, List.of(Topology.ofNode("n7")), 0))
        .isInstanceOf(CsiException.class).hasMessageContaining("requisite")
        .extracting(e -> ((CsiException) e).kind()).isEqualTo(CsiException.Kind.RESOURCE_EXHAUSTED);
  }

  @Test
  void aNodeWithoutRoomForTheVolumeIsNotChosen() {
    assertThat(Placement.choose(reports, List.of(Topology.ofNode("n1"), Topology.ofNode("n4")), 80)).isEqualTo("n1");
    assertThatThrownBy(() -> Placement.choose(reports, List.of(), 400)).isInstanceOf(CsiException.class)
        .hasMessageContaining("n2 300");
  }
}
