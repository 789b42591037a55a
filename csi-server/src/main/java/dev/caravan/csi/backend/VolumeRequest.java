package dev.caravan.csi.backend;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * A validated CreateVolume request in domain terms.
 *
 * @param name the CO's idempotency key
 * @param capacity requested size bounds
 * @param accessTypes every way the volume will be used (mount, block or both)
 * @param fsType filesystem requested by a mount capability ("ext4", "xfs"), if any
 * @param parameters backend parameters, already checked against {@link ControllerBackend#knownParameters()}
 * @param source initial content, if any
 * @param requisite topologies the volume must be reachable from (empty: anywhere)
 * @param preferred topologies the CO prefers, best first
 * @param passphrase the encryption passphrase from the request's secrets, present only when
 *     {@code parameters.encryption} is {@code on} ({@link Encryption}); the caller closes it after the
 *     call
 */
public record VolumeRequest(
    String name,
    CapacityRange capacity,
    Set<AccessType> accessTypes,
    Optional<String> fsType,
    Map<String, String> parameters,
    Optional<ContentSource> source,
    List<Topology> requisite,
    List<Topology> preferred,
    Optional<Passphrase> passphrase) {
  public VolumeRequest {
    accessTypes = Set.copyOf(accessTypes);
    parameters = Map.copyOf(parameters);
    requisite = List.copyOf(requisite);
    preferred = List.copyOf(preferred);
    java.util.Objects.requireNonNull(passphrase, "passphrase");
  }

  /** A request for an unencrypted volume (no passphrase). */
  public VolumeRequest(
      String name,
      CapacityRange capacity,
      Set<AccessType> accessTypes,
      Optional<String> fsType,
      Map<String, String> parameters,
      Optional<ContentSource> source,
      List<Topology> requisite,
      List<Topology> preferred) {
    this(name, capacity, accessTypes, fsType, parameters, source, requisite, preferred, Optional.empty());
  }

  /** Whether CreateVolume asked for an encrypted volume. */
  public boolean encrypted() {
    return Encryption.mode(parameters) == Encryption.Mode.ON;
  }
}
