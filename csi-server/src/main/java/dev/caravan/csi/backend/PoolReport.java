package dev.caravan.csi.backend;

/**
 * A storage pool a backend allocates from (a ZFS pool for {@code local}), for the pool gauges.
 *
 * @param allocatedBytes what volumes have been promised (thick sizes, reservations)
 */
public record PoolReport(
    String name, boolean online, long sizeBytes, long allocatedBytes, long freeBytes, long volumes) {}
