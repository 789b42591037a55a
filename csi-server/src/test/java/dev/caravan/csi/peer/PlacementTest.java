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

  // Free space in MiB: 50, 100 and 300 MiB are different counts of whole grains.
  private static final long U = 1L << 20;

  private final List<PlacementReport> reports =
      List.of(report("n1", 100 * U, 5), report("n2", 300 * U, 9), report("n3", 300 * U, 2), report("n4", 50 * U, 0));

  @Test
  void mostFreeBytesWinsAndTiesGoToFewestVolumes() {
    assertThat(Placement.choose(reports, List.of(), 0)).isEqualTo("n3");
  }

  @Test
  void freeSpaceWithinOneGrainIsATieThatTheVolumeCountDecides() {
    long g = Placement.GRAIN;
    // A few KiB of pool metadata must not outweigh a volume count, however the bytes fall.
    assertThat(Placement.choose(List.of(report("n1", 11 * g + 5000, 2), report("n2", 11 * g + 2000, 1)), List.of(), 0))
        .isEqualTo("n2");
    assertThat(Placement.choose(List.of(report("n1", 11 * g, 1), report("n2", 11 * g + 4096, 1)), List.of(), 0))
        .isEqualTo("n1");
    // A grain more is a reason.
    assertThat(Placement.choose(List.of(report("n1", 12 * g, 7), report("n2", 11 * g + 4096, 1)), List.of(), 0))
        .isEqualTo("n1");
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
    assertThat(Placement.choose(reports, List.of(Topology.ofNode("n1"), Topology.ofNode("n4")), 80 * U)).isEqualTo("n1");
    assertThatThrownBy(() -> Placement.choose(reports, List.of(), 400 * U)).isInstanceOf(CsiException.class)
        .hasMessageContaining("n2 " + 300 * U);
  }
}
