package dev.caravan.csi.observe.metrics;

import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.node.StagedVolume;
import dev.caravan.storage.multipath.Multipath;
import dev.caravan.storage.multipath.MultipathMap;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.nio.file.Path;
import java.util.Optional;
import java.util.function.Function;

/**
 * {@code caravan_volume_multipath_paths}: for each volume staged on this node whose device is a
 * multipath map (the qnap backend's iSCSI LUNs), how many of the map's paths are up ({@code
 * MultipathPath#isUp}: active in device-mapper and found ready by multipathd's checker) and how
 * many are not. Read at scrape time
 * from sysfs and multipathd, never by I/O to the device, which queues while the target is stalled.
 * Volumes on a loop device or a zvol have no map and no sample.
 */
final class MultipathPathsGauge {
  static final String NAME = "caravan_volume_multipath_paths";

  private MultipathPathsGauge() {}

  /** Registers the gauge, reading the host's maps through multipathd. */
  static void register(PrometheusRegistry registry, NodeJournal journal) {
    register(registry, journal, device -> Multipath.wwidOf(device).flatMap(Host.MULTIPATH::map));
  }

  /**
   * The host's multipathd, reached only once a staged volume's device is a multipath map: a node
   * without maps never loads its client.
   */
  private static final class Host {
    static final Multipath MULTIPATH = Multipath.system();
  }

  /** @param mapAt the multipath map at a staged volume's device, empty when it is none */
  static void register(
      PrometheusRegistry registry, NodeJournal journal, Function<Path, Optional<MultipathMap>> mapAt) {
    GaugeWithCallback.builder()
        .name(NAME)
        .help("Paths of the multipath map of each staged volume (the qnap backend's iSCSI LUNs), by state: up"
            + " (active in device-mapper and ready by multipathd's checker) or down (any other).")
        .labelNames("volume_id", "state")
        .callback(cb -> {
          for (StagedVolume v : journal.all()) {
            Optional<MultipathMap> map = v.device().flatMap(device -> read(mapAt, device));
            if (map.isPresent()) {
              int up = map.get().upPaths().size();
              cb.call(up, v.volumeId(), "up");
              cb.call(map.get().paths().size() - up, v.volumeId(), "down");
            }
          }
        })
        .register(registry);
  }

  // A scrape must not fail because one map cannot be read (multipathd restarting, a map going away).
  private static Optional<MultipathMap> read(Function<Path, Optional<MultipathMap>> mapAt, Path device) {
    try {
      return mapAt.apply(device);
    } catch (RuntimeException e) {
      return Optional.empty();
    }
  }
}
