package dev.caravan.csi.observe.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import dev.caravan.csi.backend.AccessType;
import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.node.StagedVolume;
import dev.caravan.storage.block.Wwid;
import dev.caravan.storage.multipath.MultipathMap;
import dev.caravan.storage.multipath.MultipathPath;
import dev.caravan.storage.multipath.PathState;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The multipath path gauge over a node journal: each staged volume on a multipath map gets its up
 * and down paths, by multipathd's verdicts; a volume on a plain device, or whose map cannot be read,
 * gets no sample, and the scrape still succeeds.
 */
class MultipathPathsGaugeTest {
  private static final Path MAP_DEVICE = Path.of("/dev/mapper/36001405aaaa");
  private static final Path GONE_DEVICE = Path.of("/dev/mapper/36001405bbbb");
  private static final Path LOOP_DEVICE = Path.of("/dev/loop3");

  @TempDir Path tmp;

  @Test
  void countsTheUpAndDownPathsOfEachStagedVolumesMap() {
    NodeJournal journal = NodeJournal.open(tmp);
    journal.put(staged("qnap/v1/cve-one", MAP_DEVICE));
    journal.put(staged("qnap/v1/cve-gone", GONE_DEVICE));
    journal.put(staged("file/vol-loop", LOOP_DEVICE));
    journal.put(new StagedVolume("qnap/v1/cve-unstaged", Map.of(), AccessType.MOUNT, "ext4", Optional.empty(),
        List.of(), List.of()));
    MultipathMap map = new MultipathMap("36001405aaaa", Wwid.of("36001405aaaa"), MAP_DEVICE, "253:0",
        List.of(
            path("sdb", PathState.ACTIVE, "ready", "running"),
            path("sdc", PathState.FAILED, "faulty", "transport-offline"),
            path("sdd", PathState.ACTIVE, "shaky", "running")),
        List.of());
    PrometheusRegistry registry = new PrometheusRegistry();

    MultipathPathsGauge.register(registry, journal, device -> {
      if (device.equals(GONE_DEVICE)) {
        throw new IllegalStateException("multipathd is restarting");
      }
      return device.equals(MAP_DEVICE) ? Optional.of(map) : Optional.empty();
    });

    assertThat(samples(registry))
        .containsExactly(Map.entry("qnap/v1/cve-one down", 2.0), Map.entry("qnap/v1/cve-one up", 1.0));
  }

  @Test
  void aNodeWithoutMultipathMapsRegistersTheFamilyWithoutSamples() {
    NodeJournal journal = NodeJournal.open(tmp);
    journal.put(staged("file/vol-loop", LOOP_DEVICE));
    PrometheusRegistry registry = new PrometheusRegistry();

    MultipathPathsGauge.register(registry, journal, device -> Optional.empty());

    assertThat(samples(registry)).isEmpty();
    assertThat(registry.scrape().stream().map(s -> s.getMetadata().getPrometheusName()))
        .containsExactly(MultipathPathsGauge.NAME);
  }

  private static StagedVolume staged(String id, Path device) {
    return new StagedVolume(id, Map.of(), AccessType.MOUNT, "ext4", Optional.of(device), List.of(), List.of());
  }

  private static MultipathPath path(String disk, PathState state, String checker, String device) {
    return new MultipathPath(Path.of("/dev", disk), "3:0:0:" + disk.charAt(2), state, checker, device);
  }

  /** "volume_id state" to value. */
  private static Map<String, Double> samples(PrometheusRegistry registry) {
    Map<String, Double> found = new TreeMap<>();
    for (MetricSnapshot s : registry.scrape()) {
      for (GaugeSnapshot.GaugeDataPointSnapshot p : ((GaugeSnapshot) s).getDataPoints()) {
        found.put(p.getLabels().get("volume_id") + " " + p.getLabels().get("state"), p.getValue());
      }
    }
    return found;
  }
}
