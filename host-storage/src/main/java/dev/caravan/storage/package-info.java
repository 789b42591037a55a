/**
 * Caravan host-storage: the host's block devices, filesystems and mounts, reached directly through
 * system calls and C libraries (Java's Foreign Function &amp; Memory API) rather than by running
 * {@code losetup}, {@code blkid} or {@code mount}.
 *
 * <p>Start with {@link dev.caravan.storage.block.LoopDevices}, {@link
 * dev.caravan.storage.fs.Filesystems} and {@link dev.caravan.storage.mount.Mounts}. Everything
 * thrown is a {@link dev.caravan.storage.StorageException}; a failed system call is a {@link
 * dev.caravan.storage.SyscallException} that names its errno. Classes under {@code
 * dev.caravan.storage.internal} are not API.
 */
package dev.caravan.storage;
