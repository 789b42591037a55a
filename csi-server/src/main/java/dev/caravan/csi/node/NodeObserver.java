package dev.caravan.csi.node;

import java.nio.file.Path;

/**
 * What the node engine tells the rest of the plugin (metrics, the usage collector) while it works.
 * Implementations must be cheap and must not throw: they run inside node RPCs.
 */
public interface NodeObserver {
  NodeObserver NONE = new NodeObserver() {};

  /**
   * One host operation finished: {@code op} is attach, detach, format, mount, bind, unmount or grow;
   * {@code outcome} is ok or error (format: formatted, existing, refused or error).
   */
  default void operation(String op, String outcome, long nanos) {}

  /**
   * The engine is about to unmount the staging path of {@code volumeId}: whoever holds files open
   * under it (a usage walk) must let go before this returns, or the unmount fails with EBUSY.
   */
  default void releasing(String volumeId, Path stagingPath) {}

  /** Both, in order. */
  static NodeObserver both(NodeObserver a, NodeObserver b) {
    return new NodeObserver() {
      @Override
      public void operation(String op, String outcome, long nanos) {
        a.operation(op, outcome, nanos);
        b.operation(op, outcome, nanos);
      }

      @Override
      public void releasing(String volumeId, Path stagingPath) {
        a.releasing(volumeId, stagingPath);
        b.releasing(volumeId, stagingPath);
      }
    };
  }
}
