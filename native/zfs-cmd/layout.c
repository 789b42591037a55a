/*
 * Prints what Caravan's hand-written FFM layout of zfs_cmd_t (host-storage,
 * dev.caravan.storage.internal.zfs.ZfsCommand) must agree with: every member's
 * offset and size, the struct sizes, the request numbers of the raw ioctls
 * Caravan sends and the name buffer sizes. Built and run by
 * native/zfs-cmd/print-layout against the OpenZFS headers of one version; the
 * output for the versions Caravan supports is committed as
 * native/zfs-cmd/zfs_cmd_t.layout and compared with the Java layout by
 * ZfsCommandLayoutTest.
 *
 * Line formats (declaration order):
 *   struct <type> <sizeof>
 *   field <type> <member> <offsetof> <sizeof member>
 *   constant <name> <value>
 */
#include <stddef.h>
#include <stdio.h>
#include <sys/zfs_ioctl.h>

#define STRUCT(type) printf("struct %s %zu\n", #type, sizeof(type))
#define FIELD(type, member) \
	printf("field %s %s %zu %zu\n", #type, #member, offsetof(type, member), \
	    sizeof (((type *)0)->member))
#define CONSTANT(name) printf("constant %s %llu\n", #name, (unsigned long long)(name))

int
main(void)
{
	STRUCT(zfs_cmd_t);
	FIELD(zfs_cmd_t, zc_name);
	FIELD(zfs_cmd_t, zc_nvlist_src);
	FIELD(zfs_cmd_t, zc_nvlist_src_size);
	FIELD(zfs_cmd_t, zc_nvlist_dst);
	FIELD(zfs_cmd_t, zc_nvlist_dst_size);
	FIELD(zfs_cmd_t, zc_nvlist_dst_filled);
	FIELD(zfs_cmd_t, zc_pad2);
	FIELD(zfs_cmd_t, zc_history);
	FIELD(zfs_cmd_t, zc_value);
	FIELD(zfs_cmd_t, zc_string);
	FIELD(zfs_cmd_t, zc_guid);
	FIELD(zfs_cmd_t, zc_nvlist_conf);
	FIELD(zfs_cmd_t, zc_nvlist_conf_size);
	FIELD(zfs_cmd_t, zc_cookie);
	FIELD(zfs_cmd_t, zc_objset_type);
	FIELD(zfs_cmd_t, zc_perm_action);
	FIELD(zfs_cmd_t, zc_history_len);
	FIELD(zfs_cmd_t, zc_history_offset);
	FIELD(zfs_cmd_t, zc_obj);
	FIELD(zfs_cmd_t, zc_iflags);
	FIELD(zfs_cmd_t, zc_share);
	FIELD(zfs_cmd_t, zc_objset_stats);
	FIELD(zfs_cmd_t, zc_begin_record);
	FIELD(zfs_cmd_t, zc_inject_record);
	FIELD(zfs_cmd_t, zc_defer_destroy);
	FIELD(zfs_cmd_t, zc_flags);
	FIELD(zfs_cmd_t, zc_action_handle);
	FIELD(zfs_cmd_t, zc_cleanup_fd);
	FIELD(zfs_cmd_t, zc_simple);
	FIELD(zfs_cmd_t, zc_pad);
	FIELD(zfs_cmd_t, zc_sendobj);
	FIELD(zfs_cmd_t, zc_fromobj);
	FIELD(zfs_cmd_t, zc_createtxg);
	FIELD(zfs_cmd_t, zc_stat);
	FIELD(zfs_cmd_t, zc_zoneid);

	STRUCT(dmu_objset_stats_t);
	FIELD(dmu_objset_stats_t, dds_num_clones);
	FIELD(dmu_objset_stats_t, dds_creation_txg);
	FIELD(dmu_objset_stats_t, dds_guid);
	FIELD(dmu_objset_stats_t, dds_type);
	FIELD(dmu_objset_stats_t, dds_is_snapshot);
	FIELD(dmu_objset_stats_t, dds_inconsistent);
	FIELD(dmu_objset_stats_t, dds_redacted);
	FIELD(dmu_objset_stats_t, dds_origin);

	CONSTANT(MAXPATHLEN);
	CONSTANT(ZFS_MAX_DATASET_NAME_LEN);
	CONSTANT(ZFS_IOC_POOL_STATS);
	CONSTANT(ZFS_IOC_OBJSET_STATS);
	CONSTANT(ZFS_IOC_DATASET_LIST_NEXT);
	CONSTANT(ZFS_IOC_SNAPSHOT_LIST_NEXT);
	CONSTANT(ZFS_IOC_SET_PROP);
	CONSTANT(BLKZNAME);
	CONSTANT(DMU_OST_ZFS);
	CONSTANT(DMU_OST_ZVOL);
	return (0);
}
