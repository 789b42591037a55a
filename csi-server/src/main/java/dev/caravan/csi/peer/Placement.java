package dev.caravan.csi.peer;

import dev.caravan.csi.backend.CsiException;
import dev.caravan.csi.backend.Topology;
import dev.caravan.csi.peer.v1.PlacementReport;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Collectors;

/**
 * {@code host=auto}: among the nodes the request's accessibility requirements admit, the one with the
 * most free bytes after what is promised and reserved ({@link PlacementReport#getFreeBytes()}), counted
 * in whole {@link #GRAIN}s; ties go to the node with fewest volumes, then to the smaller node id, so
 * that equal reports always pick the same node.
 *
 * <p>Why a grain: equal pools never report equal bytes for long. ZFS metadata and a transaction group
 * in flight move a pool's free space by kilobytes, so comparing bytes would let that noise, not the
 * volume count, choose among pools that are equal for every purpose a volume has.
 */
final class Placement {
  /** Free space that differs by less than this between two nodes is not a reason to prefer one. */
  static final long GRAIN = 64L << 20;

  private static final Comparator<PlacementReport> BEST = Comparator
      .comparingLong((PlacementReport r) -> Math.floorDiv(r.getFreeBytes(), GRAIN)).reversed()
      .thenComparingInt(PlacementReport::getVolumes)
      .thenComparing(PlacementReport::getNode);

  private Placement() {}

  /** The nodes of {@code reports}, best first (the order {@link #choose} picks by). */
  static List<String> rank(List<PlacementReport> reports) {
    return reports.stream().sorted(BEST).map(PlacementReport::getNode).toList();
  }

  static String choose(List<PlacementReport> reports, List<Topology> requisite, long requiredBytes) {
    List<PlacementReport> admitted = reports.stream()
        .filter(r -> requisite.isEmpty() || requisite.stream().anyMatch(Topology.ofNode(r.getNode())::satisfies))
        .toList();
    if (admitted.isEmpty()) {
      throw new CsiException(CsiException.Kind.RESOURCE_EXHAUSTED, "accessibility_requirements.requisite admits"
          + " none of the nodes " + reports.stream().map(PlacementReport::getNode).sorted().toList()
          + " (each has only the segment " + Topology.NODE_KEY + "=<node>)");
    }
    return admitted.stream()
        .filter(r -> r.getFreeBytes() >= requiredBytes)
        .min(BEST)
        .map(PlacementReport::getNode)
        .orElseThrow(() -> new CsiException(CsiException.Kind.RESOURCE_EXHAUSTED, "no node has " + requiredBytes
            + " bytes free after promised and reserved space: "
            + admitted.stream().map(r -> r.getNode() + " " + r.getFreeBytes())
                .collect(Collectors.joining(", "))));
  }
}
