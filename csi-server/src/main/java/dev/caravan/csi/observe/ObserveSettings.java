package dev.caravan.csi.observe;

import dev.caravan.csi.observe.http.HttpSettings;
import dev.caravan.csi.observe.nomad.NomadClient;
import dev.caravan.csi.observe.stats.UsageCollector;
import java.util.Optional;

/**
 * What the plugin exposes about itself.
 *
 * @param metrics whether to instrument RPCs and operations (off: every hook is a no-op)
 * @param http the observe HTTP server; empty = none (and no background usage collection)
 * @param nomad Nomad's task API, for answering by Nomad volume id
 */
public record ObserveSettings(
    boolean metrics, Optional<HttpSettings> http, UsageCollector.Settings stats, Optional<NomadClient> nomad) {
  /** Nothing: no HTTP server, no metrics (tests and {@code caravan demo}). */
  public static ObserveSettings off() {
    return new ObserveSettings(false, Optional.empty(), UsageCollector.Settings.defaults(), Optional.empty());
  }

  public static ObserveSettings on(HttpSettings http) {
    return new ObserveSettings(true, Optional.of(http), UsageCollector.Settings.defaults(), Optional.empty());
  }

  public ObserveSettings withStats(UsageCollector.Settings s) {
    return new ObserveSettings(metrics, http, s, nomad);
  }

  public ObserveSettings withNomad(Optional<NomadClient> n) {
    return new ObserveSettings(metrics, http, stats, n);
  }

  public ObserveSettings withMetrics(boolean on) {
    return new ObserveSettings(on, http, stats, nomad);
  }
}
