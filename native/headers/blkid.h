/* Caravan jextract input for libblkid (Debian: libblkid-dev). */
#include <blkid/blkid.h>
