/* Caravan jextract input for libopeniscsiusr (Debian: libopeniscsiusr-dev). */
#include <libopeniscsiusr.h>
