package dev.caravan.csi.backend;

/** GetCapacity in domain terms: bytes available for new volumes and the size bounds of one volume. */
public record CapacityReport(long availableBytes, long maximumVolumeBytes, long minimumVolumeBytes) {}
