package dev.caravan.csi.backend;


import dev.caravan.csi.backend.file.FileBackend;
import java.util.List;

/** Chooses a backend by driver name. */
public final class Backends {
  public static final List<String> DRIVERS = List.of("file", "local", "qnap");

  private Backends() {}

  /**
   * Opens the backend for {@code driver}.
   *
   * @throws IllegalArgumentException for an unknown driver or one that is not implemented yet
   */
  public static Backend open(String driver, BackendConfig config) {
    return switch (driver) {
      case "file" -> FileBackend.open(config);
      case "local" ->
          throw new IllegalArgumentException(
              "the local (ZFS) backend is not implemented yet; use --driver=file");
      case "qnap" ->
          throw new IllegalArgumentException(
              "the qnap (iSCSI) backend is not implemented yet; use --driver=file");
      default ->
          throw new IllegalArgumentException(
              "unknown driver '" + driver + "'; known drivers: " + String.join(", ", DRIVERS));
    };
  }
}
