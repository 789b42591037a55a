package dev.caravan.csi.backend;

/**
 * What every backend is built from when it opens: its driver name, its controller half and its node
 * half, fixed for the plugin's life. A backend extends this and adds only what is its own (readiness,
 * describe, pools, close).
 */
public abstract class BackendHalves implements Backend {
  private final String driver;
  private final ControllerBackend controller;
  private final NodeBackend node;

  protected BackendHalves(String driver, ControllerBackend controller, NodeBackend node) {
    this.driver = driver;
    this.controller = controller;
    this.node = node;
  }

  @Override
  public final String driver() {
    return driver;
  }

  @Override
  public final ControllerBackend controller() {
    return controller;
  }

  @Override
  public final NodeBackend node() {
    return node;
  }
}
