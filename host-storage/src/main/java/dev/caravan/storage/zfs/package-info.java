/**
 * ZFS for Caravan and for any JVM agent that embeds host-storage: one facade, {@link
 * dev.caravan.storage.zfs.Zfs}, owns every ZFS operation (pool health and space, dataset
 * properties and listings, zvol create/grow/destroy, snapshots, independent clones, the zvol's
 * block device) through libzfs_core and {@code /dev/zfs} ioctls; and {@link
 * dev.caravan.storage.zfs.ZfsStreams} (from {@code Zfs.streams()}) sends snapshots into Java
 * channels and receives them from one, resumably, for replication. It never runs {@code zfs} or
 * {@code zpool}.
 *
 * <p>Values are immutable ({@link dev.caravan.storage.zfs.ZvolSpec}, {@link
 * dev.caravan.storage.zfs.PoolStatus}, {@link dev.caravan.storage.zfs.DatasetProperties}); failures
 * inside ZFS are {@link dev.caravan.storage.zfs.ZfsException}s carrying the errno and per-item
 * errors; the facade's own safety refusals are {@link dev.caravan.storage.zfs.ZfsRefusedException}s
 * with a reason; a host without ZFS gives {@link
 * dev.caravan.storage.NativeLibraryUnavailableException} from {@link
 * dev.caravan.storage.zfs.Zfs#open()}.
 */
package dev.caravan.storage.zfs;
