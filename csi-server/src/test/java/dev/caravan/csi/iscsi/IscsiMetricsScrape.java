package dev.caravan.csi.iscsi;

import dev.caravan.csi.node.NodeJournal;
import dev.caravan.csi.observe.metrics.PrometheusMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * The sweeper's metric families as a qnap node plugin exposes them, for tests outside this package
 * that check names against what Caravan exports (the sweeper runs only on qnap, so a file plugin's
 * /metrics never has them).
 */
public final class IscsiMetricsScrape {
  private IscsiMetricsScrape() {}

  /** The registry a qnap node plugin's sweeper registers its families in. */
  public static PrometheusRegistry registry(Path journalDir) throws IOException {
    PrometheusMetrics metrics = new PrometheusMetrics();
    NodeJournal journal = NodeJournal.open(journalDir);
    // Constructing the service registers its families; no sweep is needed for their names.
    new IscsiSweeperService((scope, claims) -> List.of(), s -> true, s -> false, journal,
        Optional.of(metrics.registry()));
    return metrics.registry();
  }
}
