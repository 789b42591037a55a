package dev.caravan.csi.backend.qnap;

import dev.caravan.csi.backend.NodeBackend;
import java.time.Duration;
import java.util.Optional;

/**
 * The qnap backend's node half as the plugin builds it, for benchmarks: {@link QnapNode} over the
 * host's open-iscsi and multipathd. It lives in the backend's package (in the benchmarks jar) because
 * the backend keeps its node package-private and only {@link QnapBackend#open} builds it, which also
 * needs an appliance and its credentials; a benchmark of the node side needs neither.
 */
public final class QnapNodes {
  // The same limits QnapBackend gives its node: one iscsiadm run, and the wait for disks and the map.
  private static final Duration ISCSIADM_TIMEOUT = Duration.ofSeconds(45);
  private static final Duration DEVICE_WAIT = Duration.ofSeconds(60);

  private QnapNodes() {}

  /**
   * The node backend a {@code --driver=qnap} plugin runs, logging in through iscsid's default interface
   * to {@code portals} only (its {@code qnap.portals}).
   */
  public static NodeBackend system(java.util.List<String> portals) {
    return new QnapNode(Initiator.system(ISCSIADM_TIMEOUT, Optional.empty()), DEVICE_WAIT, portals);
  }
}
