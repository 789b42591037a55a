package dev.caravan.csi.backend;

/**
 * What {@link ControllerBackend#provisionVolume} answers: the volume, and whether that very call made
 * it. A caller that undoes a failed operation destroys only a volume its own call made: one it found
 * (complete, or half-made by an earlier call) may hold data.
 *
 * @param made true when this call created the volume; false when it existed already under the name
 */
public record Provisioned(VolumeInfo volume, boolean made) {}
