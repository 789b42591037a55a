package dev.caravan.csi.drivers;

import dev.caravan.csi.backend.Backend;
import dev.caravan.csi.backend.BackendConfig;
import dev.caravan.csi.backend.file.FileBackend;
import dev.caravan.csi.backend.local.LocalBackend;
import dev.caravan.csi.backend.qnap.QnapBackend;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/** Chooses a backend by driver name. */
public final class Backends {
  public static final List<String> DRIVERS = List.of("file", "local", "qnap");

  private Backends() {}

  /**
   * The CreateVolume parameters {@code driver}'s volumes take; any other is refused.
   *
   * @throws IllegalArgumentException for an unknown driver
   */
  public static Set<String> parameters(String driver) {
    return switch (driver) {
      case "file" -> FileBackend.PARAMETERS;
      case "local" -> LocalBackend.PARAMETERS;
      case "qnap" -> QnapBackend.PARAMETERS;
      default ->
          throw new IllegalArgumentException(
              "unknown driver '" + driver + "'; known drivers: " + String.join(", ", DRIVERS));
    };
  }

  /**
   * Opens the backend for {@code driver}.
   *
   * @throws IllegalArgumentException for an unknown driver or bad backend options
   * @throws IllegalStateException when the host cannot run the backend (e.g. no ZFS, no usable pool)
   */
  public static Backend open(String driver, BackendConfig config) {
    // Method references, not calls: a call's result stored as a Backend makes the class verifier load
    // every backend class when this class loads, so a file node would load ZFS's and the appliance's.
    // A reference resolves its class only when its case runs.
    Function<BackendConfig, Backend> open = switch (driver) {
      case "file" -> FileBackend::open;
      case "local" -> LocalBackend::open;
      case "qnap" -> QnapBackend::open;
      default ->
          throw new IllegalArgumentException(
              "unknown driver '" + driver + "'; known drivers: " + String.join(", ", DRIVERS));
    };
    return open.apply(config);
  }
}
