package dev.caravan.storage.fs;

/**
 * Space and inode usage of a mounted filesystem. {@code availableBytes} is what an unprivileged
 * writer can still use; it is less than {@code totalBytes - usedBytes} by the blocks the filesystem
 * reserves for root.
 */
public record FsStats(
    long totalBytes,
    long usedBytes,
    long availableBytes,
    long totalInodes,
    long usedInodes,
    long freeInodes) {}
