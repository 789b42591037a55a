package dev.caravan.storage.internal.sys;

import java.lang.foreign.MemorySegment;

/** The fields of {@code struct statvfs} that host-storage uses. */
public record Statvfs(
    long fragmentSize,
    long blocks,
    long blocksFree,
    long blocksAvailable,
    long files,
    long filesFree) {
  static Statvfs read(MemorySegment s) {
    return new Statvfs(
        dev.caravan.bindings.linux.statvfs.f_frsize(s),
        dev.caravan.bindings.linux.statvfs.f_blocks(s),
        dev.caravan.bindings.linux.statvfs.f_bfree(s),
        dev.caravan.bindings.linux.statvfs.f_bavail(s),
        dev.caravan.bindings.linux.statvfs.f_files(s),
        dev.caravan.bindings.linux.statvfs.f_ffree(s));
  }
}
