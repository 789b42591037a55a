/**
 * Not API. The system calls host-storage makes, as FFM downcalls into glibc ({@link
 * dev.caravan.storage.internal.sys.Libc}), with the structs and ioctl numbers they need. Every call
 * captures errno and fails with a {@link dev.caravan.storage.SyscallException}; native memory lives
 * in an arena confined to the one call, and {@code MemorySegment}s stay in this package's callers
 * under {@code internal}.
 */
package dev.caravan.storage.internal.sys;
