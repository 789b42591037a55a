/**
 * Not API. libopeniscsiusr through FFM: the iSCSI sessions the kernel has (read from sysfs by the
 * library) and the node records iscsiadm keeps. {@code MemorySegment}s never leave this package:
 * callers get plain Java records.
 */
package dev.caravan.storage.internal.iscsi;
