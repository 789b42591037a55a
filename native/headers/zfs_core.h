/*
 * Caravan jextract input for libzfs_core + libnvpair (Debian: libzfslinux-dev).
 * Needs -I/usr/include/libzfs -I/usr/include/libspl (see native/regenerate).
 * <sys/fs/zfs.h> supplies dmu_objset_type_t and the zfs_ioc_t enum;
 * zfs_cmd_t lives in sys/zfs_ioctl.h, which libzfslinux-dev does not install.
 */
#include <libnvpair.h>
#include <libzfs_core.h>
#include <sys/fs/zfs.h>
