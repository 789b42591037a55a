/*
 * Caravan jextract input for Linux UAPI constants and struct layouts
 * (Debian: linux-libc-dev, libc6-dev). No shared library is bound.
 */
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <linux/falloc.h>
