package dev.caravan.csi.backend;

import java.time.Instant;

/** A point-in-time copy of a volume. */
public record SnapshotInfo(
    String id, String name, String sourceVolumeId, long sizeBytes, Instant createdAt, boolean readyToUse) {}
