package dev.caravan.csi.observe.metrics;

import dev.caravan.csi.node.NodeObserver;
import java.time.Instant;
import java.util.function.Supplier;

/**
 * The instrumentation hooks the plugin calls on its hot paths: one RPC finished, one node host
 * operation finished, one backend operation finished. {@link #NONE} does nothing, so a plugin with
 * metrics disabled pays one interface call per hook and nothing else.
 */
public interface Metrics extends NodeObserver {
  Metrics NONE = new Metrics() {
    @Override
    public void rpc(String method, String code, long nanos) {}

    @Override
    public void backendOperation(String backend, String op, String outcome, long nanos) {}

    @Override
    public boolean enabled() {
      return false;
    }
  };

  boolean enabled();

  /** One gRPC call ended with {@code code} (e.g. OK, NOT_FOUND) after {@code nanos}. */
  void rpc(String method, String code, long nanos);

  /** One backend operation (create, destroy, snapshot, snapshot_destroy, clone, grow) ended. */
  void backendOperation(String backend, String op, String outcome, long nanos);

  /** A ControllerPublish was refused because the storage has the volume attached to another node (the fence). */
  default void fencedPublish(String backend) {}

  /** A ControllerUnpublish removed an attachment that had refused another node's publish (see {@link MeteredControllerBackend}). */
  default void forcedDetach(String backend) {}

  /** This node refused a peer's handshake or call, for {@code reason} (the peer package's reason labels). */
  default void peerRefusal(String reason) {}

  /** This node's peer certificate's expiry, as {@code notAfter} reads it at each scrape (the file is re-read on change). */
  default void peerCertificateExpiry(Supplier<Instant> notAfter) {}

  /** A replication stream of {@code volume} to {@code node} sent {@code bytes}. */
  default void replicationSent(String volume, String node, long bytes) {}

  /** A replication round of {@code volume} to {@code node} failed. */
  default void replicationFailure(String volume, String node) {}

  /**
   * How old each replica is, read at each scrape: (volume id, node) to the seconds since the start of
   * the last round that brought it up to date.
   */
  default void replicationLag(Supplier<java.util.Map<java.util.List<String>, Double>> lags) {}

  /**
   * Each replicated volume's interval, read at each scrape: volume id to seconds between its rounds,
   * so that an alert can compare a replica's lag with it.
   */
  default void replicationInterval(Supplier<java.util.Map<String, Double>> intervals) {}
}
