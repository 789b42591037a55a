package dev.caravan.csi.backend;

/**
 * One storage backend (file, local ZFS, qnap iSCSI): a controller half, a node half and a readiness
 * check. Chosen at start by {@code caravan serve --driver=...}.
 */
public interface Backend extends AutoCloseable {
  /** Short driver name: "file", "local", "qnap". */
  String driver();

  ControllerBackend controller();

  NodeBackend node();

  /** Probe's answer: whether the backend can serve calls right now. */
  Readiness readiness();

  @Override
  default void close() {}
}
