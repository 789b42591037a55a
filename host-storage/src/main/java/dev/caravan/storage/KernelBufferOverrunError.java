package dev.caravan.storage;

/**
 * The kernel wrote past the end of a buffer host-storage handed it: native memory next to that
 * buffer may be corrupt, so nothing the process does afterwards can be trusted. An {@link
 * InternalError} (a {@link VirtualMachineError}) so that handlers that catch and answer ordinary
 * failures let it through; the plugin stops on it.
 */
public final class KernelBufferOverrunError extends InternalError {
  private static final long serialVersionUID = 1L;

  public KernelBufferOverrunError(String message) {
    super(message);
  }
}
