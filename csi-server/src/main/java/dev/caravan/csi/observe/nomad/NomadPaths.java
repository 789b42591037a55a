package dev.caravan.csi.observe.nomad;

import java.nio.file.Path;
import java.util.Optional;

/**
 * What Nomad's mount layout says about a path (see nomad-csi.md §1.1): staging paths are
 * {@code <base>/staging/<namespace>/<volume>/<usage>} (before Nomad 1.8:
 * {@code <base>/staging/<volume>/<usage>}), publish targets
 * {@code <base>/per-alloc/<alloc-id>/<volume>/<usage>}. Used for labels and evidence only, never
 * to decide anything.
 */
public final class NomadPaths {
  private NomadPaths() {}

  /** A Nomad volume (namespace and id) as read from a path. */
  public record NomadVolume(String namespace, String volumeId) {}

  public static Optional<NomadVolume> fromStagingPath(Path staging) {
    int n = staging.getNameCount();
    for (int i = n - 1; i >= 0; i--) {
      if (staging.getName(i).toString().equals("staging")) {
        int after = n - 1 - i;
        if (after == 3) {
          return Optional.of(new NomadVolume(staging.getName(i + 1).toString(), staging.getName(i + 2).toString()));
        }
        if (after == 2) {
          return Optional.of(new NomadVolume("default", staging.getName(i + 1).toString()));
        }
        return Optional.empty();
      }
    }
    return Optional.empty();
  }

  /** The allocation id in a publish target path, if it follows Nomad's layout. */
  public static Optional<String> allocationId(Path target) {
    int n = target.getNameCount();
    for (int i = n - 1; i >= 0; i--) {
      if (target.getName(i).toString().equals("per-alloc") && n - 1 - i == 3) {
        return Optional.of(target.getName(i + 1).toString());
      }
    }
    return Optional.empty();
  }
}
